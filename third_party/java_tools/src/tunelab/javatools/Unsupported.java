package tunelab.javatools;

/** Stands where the offline shim has no tool (Turbine, GenClass, coverage): fails loudly if reached. */
public final class Unsupported {
  private Unsupported() {}

  public static void main(String[] argv) {
    System.err.println("This Java tool is not available in tunelab's offline java_tools shim"
        + " (see third_party/README.md). Disable the feature that needs it.");
    System.exit(2);
  }
}
