package tunelab.tools.maven;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;

import org.apache.hadoop.util.VersionInfo;
import org.junit.Test;

/** The hadoop_mr1_1_2_1 set puts Hadoop 1.2.1 (MapReduce 1) on the classpath, apart from 3.4.2. */
public class Hadoop121SetTest {
  @Test
  public void hadoopVersionIs121() {
    assertEquals("1.2.1", VersionInfo.getVersion());
  }

  @Test
  public void examplesDriverLoads() throws Exception {
    assertNotNull(Class.forName("org.apache.hadoop.examples.ExampleDriver"));
    assertNotNull(Class.forName("org.apache.hadoop.mapred.JobTracker"));
  }
}
