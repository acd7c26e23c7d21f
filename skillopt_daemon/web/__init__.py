"""The local dashboard: `app.create_app(settings)` builds the web app; `service.dashboard` serves it.

Everything it shows comes from the same functions the CLI uses; see `security.py` for its security rules.
"""
