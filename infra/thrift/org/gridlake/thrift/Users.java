// The Thrift Server's users: one line per user in a 0600 file written by
// `python -m gridlake.serving.thrift_auth ensure` (infra/thrift.sh start):
//
//   USER ROLE ITERATIONS SALT_BASE64 PBKDF2_SHA256_BASE64
//
// ROLE is `writer` (the pipeline: everything but SQL on files), `reader` (reads every table and
// view, writes nothing) or `views` (Superset: reads the `grid` views and `gold` tables only).
// The file's path is the system property gridlake.thrift.users. It is read again whenever it
// changes, so that a new password takes effect without a restart.
package org.gridlake.thrift;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;

final class Users {
  static final String PROPERTY = "gridlake.thrift.users";

  enum Role { WRITER, READER, VIEWS }

  static final class User {
    final String name;
    final Role role;
    final int iterations;
    final byte[] salt;
    final byte[] hash;

    User(String name, Role role, int iterations, byte[] salt, byte[] hash) {
      this.name = name;
      this.role = role;
      this.iterations = iterations;
      this.salt = salt;
      this.hash = hash;
    }
  }

  private static Map<String, User> cached = Collections.emptyMap();
  private static long cachedStamp = Long.MIN_VALUE;

  private Users() {}

  static Path path() {
    String p = System.getProperty(PROPERTY);
    if (p == null || p.isEmpty()) {
      throw new IllegalStateException("gridlake: system property " + PROPERTY + " is not set");
    }
    return Paths.get(p);
  }

  /** The users, by name (the file re-read when its modification time changed). */
  static synchronized Map<String, User> load() throws IOException {
    Path p = path();
    long stamp = Files.getLastModifiedTime(p).toMillis() ^ Files.size(p);
    if (stamp == cachedStamp) {
      return cached;
    }
    Map<String, User> users = new HashMap<>();
    List<String> lines = Files.readAllLines(p, StandardCharsets.UTF_8);
    Base64.Decoder b64 = Base64.getDecoder();
    for (String line : lines) {
      String s = line.trim();
      if (s.isEmpty() || s.startsWith("#")) {
        continue;
      }
      String[] f = s.split("\\s+");
      if (f.length != 5) {
        throw new IOException("gridlake: malformed line in " + p);
      }
      Role role = Role.valueOf(f[1].toUpperCase(java.util.Locale.ROOT));
      users.put(f[0], new User(f[0], role, Integer.parseInt(f[2]), b64.decode(f[3]), b64.decode(f[4])));
    }
    cached = Collections.unmodifiableMap(users);
    cachedStamp = stamp;
    return cached;
  }

  /** The role of an authenticated user name; null when the user is unknown. */
  static Role roleOf(String name) {
    try {
      User u = load().get(name);
      return u == null ? null : u.role;
    } catch (IOException e) {
      return null;
    }
  }

  static byte[] pbkdf2(String password, byte[] salt, int iterations, int bytes)
      throws GeneralSecurityException {
    PBEKeySpec spec = new PBEKeySpec(password.toCharArray(), salt, iterations, bytes * 8);
    try {
      return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
    } finally {
      spec.clearPassword();
    }
  }
}
