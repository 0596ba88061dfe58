// Password authentication for the Spark Thrift Server (HiveServer2's CUSTOM provider):
//   hive.server2.authentication=CUSTOM
//   hive.server2.custom.authentication.class=org.gridlake.thrift.PasswordFile
// Checks a user name and password against the salted PBKDF2 hashes of Users' file. An unknown
// user costs the same work as a known one, and every refusal says the same thing.
package org.gridlake.thrift;

import java.security.MessageDigest;
import java.util.Map;
import javax.security.sasl.AuthenticationException;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

public final class PasswordFile implements PasswdAuthenticationProvider {
  private static final byte[] DUMMY_SALT = new byte[16];

  @Override
  public void Authenticate(String user, String password) throws AuthenticationException {
    Map<String, Users.User> users;
    try {
      users = Users.load();
    } catch (Exception e) {
      throw new AuthenticationException("gridlake: the user file cannot be read: " + e.getMessage());
    }
    Users.User u = user == null ? null : users.get(user);
    boolean ok;
    try {
      if (u == null) {
        Users.pbkdf2(password == null ? "" : password, DUMMY_SALT, 20000, 32);
        ok = false;
      } else {
        byte[] got = Users.pbkdf2(password == null ? "" : password, u.salt, u.iterations, u.hash.length);
        ok = password != null && !password.isEmpty() && MessageDigest.isEqual(got, u.hash);
      }
    } catch (java.security.GeneralSecurityException e) {
      throw new AuthenticationException("gridlake: " + e.getMessage());
    }
    if (!ok) {
      throw new AuthenticationException("gridlake: wrong user name or password");
    }
  }
}
