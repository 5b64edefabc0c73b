"""Superset settings for the local check (``make bi-check``), loopback only.

SUPERSET_SECRET_KEY and SUPERSET_HOME (its metadata database) come from the
environment. The check talks to the REST API with a bearer token, so CSRF is
off (never on a shared server); the browser logs in through the login form.
"""

WTF_CSRF_ENABLED = False
TALISMAN_ENABLED = False
FEATURE_FLAGS = {"ALERT_REPORTS": False}
