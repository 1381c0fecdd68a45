package org.example;

/** A stand-in for a released source file: the patch tool's tests patch it. */
public final class Greeter {
  private Greeter() {}

  public static String greet(String name) {
    StringBuilder sb = new StringBuilder();
    sb.append("hello, ");
    sb.append(name);
    return sb.toString();
  }

  public static int version() {
    return 1;
  }
}
