package tunelab.rigs.mapreduce;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.examples.WordCount;
import org.apache.hadoop.examples.terasort.TeraSort;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.GenericOptionsParser;
import org.apache.hadoop.util.ToolRunner;
import tunelab.rigs.matrix.DriverMain;
import tunelab.rigs.matrix.IterationCost;

/**
 * Runs one examples job (WordCount or TeraSort) again and again in this JVM with the local job
 * runner, so the JIT's warm-up falls in the first jobs and the measured ones time the engine.
 *
 * <p>Usage: MrJobLoop --iterations WARMUP MEASURED -- JOB [-Dname=value ...] INPUT OUTPUT
 *
 * <p>Each iteration deletes OUTPUT, prints {"event":"iteration","index":K,"warmup":true|false},
 * runs the job (its log, counters included, follows) and prints its cost line
 * (tunelab.rigs.matrix.IterationCost). The job logic is the examples jar's own: WordCount's mapper,
 * combiner and reducer classes configured as its main() does (which cannot be called twice: it
 * exits the JVM), TeraSort through ToolRunner as ExampleDriver runs it. Compiled once against each
 * engine's jars (MR1 hadoop-core 1.2.1, MR2 3.4.2): the API used is common to both. A failed job
 * ends the JVM with status 1.
 */
public final class MrJobLoop {
  private MrJobLoop() {}

  static boolean wordCount(String[] jobArgs) throws Exception {
    Configuration conf = new Configuration();
    String[] rest = new GenericOptionsParser(conf, jobArgs).getRemainingArgs();
    if (rest.length != 2) {
      throw new IllegalArgumentException(
          "wordcount: INPUT OUTPUT after the -D options, got " + rest.length);
    }
    @SuppressWarnings("deprecation")
    Job job = new Job(conf, "word count");
    job.setJarByClass(WordCount.class);
    job.setMapperClass(WordCount.TokenizerMapper.class);
    job.setCombinerClass(WordCount.IntSumReducer.class);
    job.setReducerClass(WordCount.IntSumReducer.class);
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(IntWritable.class);
    FileInputFormat.addInputPath(job, new Path(rest[0]));
    FileOutputFormat.setOutputPath(job, new Path(rest[1]));
    return job.waitForCompletion(true);
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 6 || !args[0].equals("--iterations") || !args[3].equals("--")) {
      System.err.println(
          "usage: MrJobLoop --iterations WARMUP MEASURED -- wordcount|terasort [-Dk=v ...] INPUT"
              + " OUTPUT");
      System.exit(2);
    }
    int warmupIterations = Integer.parseInt(args[1]);
    int iterations = Integer.parseInt(args[2]);
    String job = args[4];
    String[] jobArgs = java.util.Arrays.copyOfRange(args, 5, args.length);
    File output = new File(jobArgs[jobArgs.length - 1]);
    IterationCost cost = new IterationCost();
    DriverMain.runAndHalt(
        () -> {
          for (int k = 0; k < warmupIterations + iterations; k++) {
            FileUtil.fullyDelete(output);
            System.out.println(
                "{\"event\":\"iteration\",\"index\":"
                    + k
                    + ",\"warmup\":"
                    + (k < warmupIterations)
                    + "}");
            System.out.flush();
            cost.start();
            boolean ok;
            if (job.equals("wordcount")) {
              ok = wordCount(jobArgs);
            } else if (job.equals("terasort")) {
              // MR1's TeraSort casts its configuration to a JobConf (MR2's takes any).
              ok = ToolRunner.run(new JobConf(), new TeraSort(), jobArgs) == 0;
            } else {
              throw new IllegalArgumentException("job " + job + ": wordcount or terasort");
            }
            System.out.println(cost.stop(k));
            if (!ok) {
              throw new IllegalStateException("iteration " + k + ": the job failed");
            }
          }
          System.out.println("{\"event\":\"end\"}");
        });
  }
}
