package tunelab.tools.maven;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;

import org.apache.hadoop.util.VersionInfo;
import org.junit.Test;

/** The hadoop_sls_3_4_2 set puts Hadoop 3.4.2, and the simulator, on the classpath. */
public class Hadoop342SetTest {
  @Test
  public void hadoopVersionIs342() {
    assertEquals("3.4.2", VersionInfo.getVersion());
  }

  @Test
  public void runsOnTheBuildJdk17WhateverJavaHomeSays() {
    // .bazelrc pins --javabase to Debian's JDK 17; a JAVA_HOME pointing at JDK 25 must not move
    // tests.
    assertEquals("17", System.getProperty("java.specification.version"));
  }

  @Test
  public void simulatorAndResourceManagerLoad() throws Exception {
    assertNotNull(Class.forName("org.apache.hadoop.yarn.sls.SLSRunner"));
    assertNotNull(Class.forName("org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"));
  }
}
