"""Create the gridlake admin user, or reset its password, reading the password from the environment.

Run with the Superset venv's python. Unlike `superset fab create-admin --password ...`, the
password never appears on a command line (visible to every user in `ps`).
Environment: SUPERSET_ADMIN_USER, SUPERSET_ADMIN_PASSWORD, and Superset's own
(SUPERSET_CONFIG_PATH, SUPERSET_HOME, SUPERSET_SECRET_KEY).
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    from superset.app import create_app

    user_name = os.environ["SUPERSET_ADMIN_USER"]
    password = os.environ["SUPERSET_ADMIN_PASSWORD"]
    app = create_app()
    with app.app_context():
        sm = app.appbuilder.sm
        user = sm.find_user(username=user_name)
        if user is None:
            role = sm.find_role("Admin")
            if role is None:
                print("Admin role missing: run `superset init` first", file=sys.stderr)
                return 1
            created = sm.add_user(
                user_name, "Grid", "Admin", f"{user_name}@gridlake.invalid", role, password=password
            )
            if not created:
                print(f"could not create user {user_name}", file=sys.stderr)
                return 1
            print(f"created admin user {user_name}")
        else:
            sm.reset_password(user.id, password)
            print(f"reset the password of {user_name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
