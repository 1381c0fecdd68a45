package tunelab.rigs.yarn_failover;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * The local file system the rig gives the FileSystem state store ({@code fs.file.impl}), Hadoop's
 * own with one change: a file's permission is set in this process through java.nio (chmod(2)), as
 * Hadoop does it with its native library, instead of by starting a chmod process per file, which is
 * what RawLocalFileSystem does without libhadoop.so (not in the Maven set). With a process per file
 * the store wrote ~55 records (a file and its checksum file each) a second here, so each
 * submission's write timed process starts rather than the store. Checksums, renames and reads are
 * Hadoop's.
 */
public final class NioLocalFileSystem extends LocalFileSystem {
  private static final PosixFilePermission[]
      BITS = { // from the mode's highest bit (owner read) down
    PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_EXECUTE,
    PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
        PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_EXECUTE,
  };

  public NioLocalFileSystem() {
    super(new Raw());
  }

  static Set<PosixFilePermission> posix(FsPermission permission) {
    int mode = permission.toShort();
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < BITS.length; i++) {
      if ((mode & (1 << (8 - i))) != 0) {
        out.add(BITS[i]);
      }
    }
    return out;
  }

  /**
   * RawLocalFileSystem with {@link #setPermission} through java.nio; the sticky bit is not set
   * (unused here).
   */
  static final class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission));
    }
  }
}
