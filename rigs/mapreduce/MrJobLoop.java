package tunelab.rigs.mapreduce;

import java.io.File;
import java.util.List;
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
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.DriverMain;
import tunelab.rigs.matrix.Iterations;
import tunelab.rigs.matrix.JsonLine;

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
    DriverArgs a =
        new DriverArgs(
                "MrJobLoop",
                "MrJobLoop --iterations WARMUP MEASURED -- wordcount|terasort [-Dk=v ...] INPUT"
                    + " OUTPUT")
            .option("--iterations", 2)
            .restAfterDashDash()
            .parse(args);
    int warmup = a.integer("--iterations", 0, -1);
    int measured = a.integer("--iterations", 1, -1);
    a.check(warmup >= 0 && measured >= 1, "--iterations: expected WARMUP >= 0 and MEASURED >= 1");
    List<String> rest = a.rest();
    a.check(rest.size() >= 3, "expected JOB [-Dk=v ...] INPUT OUTPUT after --");
    String job = rest.get(0);
    a.check(
        job.equals("wordcount") || job.equals("terasort"),
        "job " + job + ": wordcount or terasort");
    String[] jobArgs = rest.subList(1, rest.size()).toArray(new String[0]);
    File output = new File(jobArgs[jobArgs.length - 1]);
    DriverMain.runAndHalt(
        () -> {
          boolean[] ok = new boolean[1];
          Iterations.run(
              warmup,
              measured,
              k -> FileUtil.fullyDelete(output),
              k -> {
                if (job.equals("wordcount")) {
                  ok[0] = wordCount(jobArgs);
                } else {
                  // MR1's TeraSort casts its configuration to a JobConf (MR2's takes any).
                  ok[0] = ToolRunner.run(new JobConf(), new TeraSort(), jobArgs) == 0;
                }
              },
              k -> {
                if (!ok[0]) {
                  throw new IllegalStateException("iteration " + k + ": the job failed");
                }
              });
          JsonLine.event("end").print();
        });
  }
}
