"""Studio settings. Everything that differs between deployments comes from the environment.

Embedded default: SQLite file and in-memory channel layer, no configuration needed.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from studio.conf import (
    dev_fernet_key,
    dev_secret,
    env_bool,
    env_choice,
    env_database,
    env_fernet_keys,
    env_float,
    env_int,
    env_is_set,
    env_list,
    env_otel_queue_size,
    env_otel_traces_exporter,
    env_rate,
    env_redis_url,
    env_str,
    runserver_apps,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("STUDIO_DATA_DIR", str(BASE_DIR / "var")))

# STUDIO_ENV=production: DEBUG off, HTTPS only, hosts named exactly (see the end of
# this file); `manage.py check --deploy --fail-level WARNING` passes.
STUDIO_ENV = env_choice("STUDIO_ENV", "development", {"development", "production"})
PRODUCTION = STUDIO_ENV == "production"
DEBUG = env_bool("STUDIO_DEBUG", not PRODUCTION)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("STUDIO_DEBUG cannot be on when STUDIO_ENV=production")
SECRET_KEY = env_str("STUDIO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("STUDIO_SECRET_KEY must be set when STUDIO_DEBUG is off")
    SECRET_KEY = dev_secret(DATA_DIR / "secret_key")

# Provider API keys are encrypted at rest with these Fernet keys, never with SECRET_KEY.
# Comma-separated: the first encrypts, every one decrypts. To rotate, put a new key
# first, run `manage.py reencrypt_api_keys`, then drop the old key.
FIELD_ENCRYPTION_KEYS = env_fernet_keys("STUDIO_FIELD_ENCRYPTION_KEYS")
if not FIELD_ENCRYPTION_KEYS:
    if not DEBUG:
        raise ImproperlyConfigured(
            "STUDIO_FIELD_ENCRYPTION_KEYS must be set when STUDIO_DEBUG is off"
        )
    FIELD_ENCRYPTION_KEYS = [dev_fernet_key(DATA_DIR / "field_encryption_key")]

ALLOWED_HOSTS = env_list("STUDIO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("STUDIO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    *runserver_apps(),  # first, before staticfiles' runserver
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Worker execution's queue (STUDIO_RUN_EXECUTION): in all configurations, one schema.
    "django_tasks_db",
    "studio",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files (STORAGES), any server
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "studio.web.sync_stack.SyncStack",  # last: see its module
]

ROOT_URLCONF = "studio.urls"
ASGI_APPLICATION = "studio.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "studio.web.approvals.inbox_count",
            ],
            "libraries": {"studio": "studio.web.format"},
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "studio.sqlite3",
        "OPTIONS": {
            # WAL lets the timeline read while a run writes; immediate transactions
            # avoid lock upgrades failing under concurrent writers.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        # Keep connections open: an ASGI server runs all ORM work on one thread, and on
        # SQLite in WAL mode closing the last connection checkpoints and deletes the WAL,
        # which made each event a live run stores cost a checkpoint (studio.runs.execute).
        "CONN_MAX_AGE": 60,
    }
}

# Scaled out: DATABASE_URL selects PostgreSQL, REDIS_URL the Redis channel layer, so
# viewers on any server see every run's events. Unset, Studio runs embedded.
_database = env_database("DATABASE_URL")
if _database is not None:
    DATABASES = {"default": _database}

# When a stored event counts as committed on PostgreSQL (SQLite ignores this).
# durable: each event's commit waits for the WAL flush; one writer then stores at most
#   one event per fdatasync (0.3-14 ms on a shared disk).
# async: event appends alone commit with synchronous_commit=off (no wait for the flush),
#   several times faster. An application crash loses nothing; a PostgreSQL server or OS
#   crash can lose the events committed in its last ~0.6 s (3 x wal_writer_delay): only
#   a tail, never a gap, since any later durable commit flushes every earlier one.
STUDIO_EVENT_COMMIT = env_choice("STUDIO_EVENT_COMMIT", "durable", {"durable", "async"})

REDIS_URL = env_redis_url("REDIS_URL")
# "live" carries sessions' live messages (studio.live.protocol.LAYER); "default" the rest.
_IN_MEMORY: dict[str, object] = {"BACKEND": "studio.layers.InMemoryChannelLayer"}
CHANNEL_LAYERS: dict[str, dict[str, object]]
if REDIS_URL is None:
    CHANNEL_LAYERS = {"default": _IN_MEMORY, "live": _IN_MEMORY}
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "studio.layers.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "capacity": 5_000, "expiry": 30},
        },
        "live": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        },
    }

# inline: runs execute as asyncio tasks in the server that started them; worker: runs are
# enqueued (django_tasks_db) and executed by `manage.py run_worker` (studio.runs.tasks).
STUDIO_RUN_EXECUTION = env_choice("STUDIO_RUN_EXECUTION", "inline", {"inline", "worker"})
# A server with inline execution imports the model client as it starts (studio.runs.preload).
STUDIO_PRELOAD = env_bool("STUDIO_PRELOAD", True)
if STUDIO_RUN_EXECUTION == "worker":
    if REDIS_URL is None:
        raise ImproperlyConfigured(
            "STUDIO_RUN_EXECUTION=worker needs REDIS_URL: workers publish events through Redis"
        )
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}Validator"}
    for name in ("UserAttributeSimilarity", "MinimumLength", "CommonPassword", "NumericPassword")
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
# In DEBUG WhiteNoise serves straight from the source folders (edits show on reload);
# otherwise from STATIC_ROOT, filled by `manage.py collectstatic`. No manifest hashing:
# the pages' ES modules import one another by plain relative URLs.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
# Files attached to messages (studio.files) are stored here, once per content, through
# the default storage; they are served only by an owner-scoped view, never from here.
MEDIA_ROOT = Path(env_str("STUDIO_MEDIA_DIR", str(DATA_DIR / "media")))
STUDIO_UPLOAD_MAX_BYTES = env_int("STUDIO_UPLOAD_MAX_BYTES", 5 * 1024 * 1024, minimum=1)
STUDIO_UPLOAD_MAX_FILES = env_int("STUDIO_UPLOAD_MAX_FILES", 4, minimum=1)
# Django refuses a multipart body larger than this outright (the files ride on it).
DATA_UPLOAD_MAX_MEMORY_SIZE = STUDIO_UPLOAD_MAX_BYTES * STUDIO_UPLOAD_MAX_FILES + 1024 * 1024
# Artifacts (studio.artifacts): versioned files of a session, each at most this large,
# stored through the "artifacts" storage (point it at object storage to keep them there).
STUDIO_ARTIFACT_MAX_BYTES = env_int("STUDIO_ARTIFACT_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "artifacts": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Pages run only their own nonce-carrying or same-origin scripts; model and tool output
# is rendered as text, and this policy is the second line of defence if that ever slips.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Each line leads with its level: an ordinary event reads apart from a failure.
    "formatters": {"levelled": {"format": "%(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "levelled"}},
    "root": {"handlers": ["console"], "level": env_str("STUDIO_LOG_LEVEL", "INFO")},
    # The MCP SDK logs whole protocol messages at DEBUG, which may quote a secret a
    # server echoed back (studio.mcp removes them only from what agents see).
    "loggers": {
        # Django's default configuration gives "django" a console handler of its own:
        # with the root's, every request and start-up line was printed twice.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "mcp": {"level": "INFO"},
    },
}

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes anonymous requests answer 401.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON only: /api/docs/ is the interactive explorer (and has no inline scripts).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON in as well: a form or multipart body cannot carry the JSON objects (spec,
    # options, edited_args) the schema promises. The token exchange also takes forms.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "studio.api.exceptions.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Studio API",
    "DESCRIPTION": "Build, run and watch agents. Every object is scoped to its owner.",
    "VERSION": "1",
    # 3.1: JSON Schema as pydantic writes it (const, anyOf null) is valid as is.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI assets come from drf-spectacular-sidecar: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # An approval's decision and a spec's on_timeout share one choice set.
    "ENUM_NAME_OVERRIDES": {
        "ApprovalDecisionEnum": ["approve", "deny"],
        "DatasetFormatEnum": "agents_core.evals.formats.FORMATS",
    },
    # Every operation documents its error responses (studio.api.schema).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "studio.api.schema.add_error_responses",
    ],
}

# Sign-in attempts per client address and per username (studio.gates.rate_limits).
STUDIO_AUTH_RATE = env_rate("STUDIO_AUTH_THROTTLE_RATE", "20/min")
# Seconds a "test connection" request to a model provider may take.
MODEL_TEST_TIMEOUT_S = env_float("STUDIO_MODEL_TEST_TIMEOUT_S", 10.0, minimum=0.1)

# Agents' files tools are jailed to STUDIO_WORKSPACES_DIR/<owner id>.
STUDIO_WORKSPACES_DIR = Path(env_str("STUDIO_WORKSPACES_DIR", str(DATA_DIR / "workspaces")))
# Programs agents may run through the shell tool; empty (the default) means no shell tool.
STUDIO_SHELL_ALLOWLIST = env_list("STUDIO_SHELL_ALLOWLIST", [])

# Live runs (studio.runs, studio.consumers). At most this many queued or running runs per
# user (runs parked on a person hold none); one more start answers 429 "too_many_runs".
STUDIO_MAX_CONCURRENT_RUNS_PER_USER = env_int("STUDIO_MAX_CONCURRENT_RUNS_PER_USER", 4, minimum=1)
# A server renews the lease on each run it executes every third of this; a run whose lease
# expired (its server died) is marked interrupted by the recovery sweep (start-up, every half).
STUDIO_RUN_LEASE_S = env_float("STUDIO_RUN_LEASE_S", 30.0, minimum=0.5)
# How often every server looks for parked runs whose approval timed out (one query of a
# partial index): a time-out fires at most this much late (studio.runs.parking).
STUDIO_PARKED_SWEEP_S = env_float("STUDIO_PARKED_SWEEP_S", 1.0, minimum=0.05)
# Model config rate limits (studio.gates): counted in windows this long (a minute, as the
# limits say; shorter only for tests); a call waits at most MAX_WAIT for room, then fails.
STUDIO_RATE_WINDOW_S = env_float("STUDIO_RATE_WINDOW_S", 60.0, minimum=0.1)
STUDIO_RATE_MAX_WAIT_S = env_float("STUDIO_RATE_MAX_WAIT_S", 120.0, minimum=0.0)
# Stored events a process keeps of the sessions it read lately (studio.session_cache).
STUDIO_SESSION_CACHE_EVENTS = env_int("STUDIO_SESSION_CACHE_EVENTS", 10_000, minimum=0)
# A websocket viewer re-reads the session's last seq and status this often, so a
# group message the channel layer dropped is made good from the database.
STUDIO_LIVE_RESYNC_S = env_float("STUDIO_LIVE_RESYNC_S", 2.0, minimum=0.05)
# Client websocket frames: larger ones close the socket with 4009; more than
# STUDIO_WS_BURST frames at once, or a sustained STUDIO_WS_RATE_PER_S, with 4429.
STUDIO_WS_MAX_MESSAGE_BYTES = env_int("STUDIO_WS_MAX_MESSAGE_BYTES", 64 * 1024, minimum=1024)
STUDIO_WS_RATE_PER_S = env_float("STUDIO_WS_RATE_PER_S", 5.0, minimum=0.1)
STUDIO_WS_BURST = env_int("STUDIO_WS_BURST", 20, minimum=1)
# OTLP trace ingest (POST /v1/traces, studio.web.otlp): 413 for a body over MAX_BYTES,
# one that inflates (gzip) past MAX_INFLATED_BYTES, or more than MAX_SPANS spans. Each
# ingest token may send BURST requests at once and RATE_PER_S sustained (windows of
# BURST / RATE_PER_S s in the database, for every server), then 429 with Retry-After.
STUDIO_OTLP_MAX_BYTES = env_int("STUDIO_OTLP_MAX_BYTES", 4 * 1024 * 1024, minimum=1024)
STUDIO_OTLP_MAX_INFLATED_BYTES = env_int(
    "STUDIO_OTLP_MAX_INFLATED_BYTES", 16 * 1024 * 1024, minimum=1024
)
STUDIO_OTLP_MAX_SPANS = env_int("STUDIO_OTLP_MAX_SPANS", 5_000, minimum=1)
STUDIO_OTLP_RATE_PER_S = env_float("STUDIO_OTLP_RATE_PER_S", 10.0, minimum=0.01)
STUDIO_OTLP_BURST = env_int("STUDIO_OTLP_BURST", 50, minimum=1)

# Outbound requests (studio.security): model and MCP server URLs may reach only public
# addresses, unless listed here: host names and addresses or CIDR networks,
# comma-separated, e.g. "ollama.internal,10.0.5.0/24,127.0.0.1" for a model server on
# the private network.
# The embedded default (`make run`: SQLite, the in-memory channel layer, inline runs, not
# production, served to loopback only) is one user on their own machine: there the
# default admits loopback, so a local model server (Ollama on 127.0.0.1:11434) works out
# of the box; never private networks or metadata addresses. Scaled out or in production
# the default is empty. `STUDIO_OUTBOUND_ALLOWLIST=` (empty) refuses loopback everywhere.
EMBEDDED_DEFAULT = (
    _database is None
    and REDIS_URL is None
    and STUDIO_RUN_EXECUTION == "inline"
    and not PRODUCTION
    and set(ALLOWED_HOSTS) <= {"127.0.0.1", "localhost", "::1", "[::1]"}
)
OUTBOUND_LOOPBACK = ["127.0.0.0/8", "::1", "localhost"]
STUDIO_OUTBOUND_LOOPBACK_BY_DEFAULT = EMBEDDED_DEFAULT and not env_is_set(
    "STUDIO_OUTBOUND_ALLOWLIST"
)
STUDIO_OUTBOUND_ALLOWLIST = env_list(
    "STUDIO_OUTBOUND_ALLOWLIST", OUTBOUND_LOOPBACK if STUDIO_OUTBOUND_LOOPBACK_BY_DEFAULT else []
)

# MCP servers (studio.mcp). A stdio server's process gets only these variables: Studio's
# own values, or the ones staff stored on the server. Never add a secret of Studio's
# (STUDIO_SECRET_KEY, DATABASE_URL, STUDIO_FIELD_ENCRYPTION_KEYS) here.
STUDIO_MCP_ENV_ALLOWLIST = env_list("STUDIO_MCP_ENV_ALLOWLIST", ["PATH", "HOME", "LANG", "TZ"])
if _leaked := [n for n in STUDIO_MCP_ENV_ALLOWLIST if n.startswith("STUDIO_") or "_URL" in n]:
    raise ImproperlyConfigured(f"STUDIO_MCP_ENV_ALLOWLIST must not pass on {', '.join(_leaked)}")
# Connecting to a server and listing its tools, and each tool call.
STUDIO_MCP_CONNECT_TIMEOUT_S = env_float("STUDIO_MCP_CONNECT_TIMEOUT_S", 20.0, minimum=0.1)
STUDIO_MCP_CALL_TIMEOUT_S = env_float("STUDIO_MCP_CALL_TIMEOUT_S", 60.0, minimum=0.1)
# Studio as an MCP server (studio.mcp_endpoint): how long a call of a published agent
# waits for its run before answering that the run goes on in Studio.
STUDIO_MCP_SERVE_RUN_TIMEOUT_S = env_float("STUDIO_MCP_SERVE_RUN_TIMEOUT_S", 300.0, minimum=0.1)
# The a2a tool (studio.a2a.client): how long a call waits for the remote agent's task.
# (Studio's own A2A server waits STUDIO_MCP_SERVE_RUN_TIMEOUT_S for a run, as for MCP.)
STUDIO_A2A_CALL_TIMEOUT_S = env_float("STUDIO_A2A_CALL_TIMEOUT_S", 300.0, minimum=0.1)

# OpenTelemetry export of every ended run as a trace (studio.traces.otel): off unless
# OTEL_TRACES_EXPORTER=otlp; the SDK reads the standard OTEL_EXPORTER_OTLP_* variables
# (checked here). Tool arguments and results, model text and approval reasons are
# exported only with STUDIO_OTEL_CAPTURE_CONTENT=1.
OTEL_TRACES_EXPORTER = env_otel_traces_exporter()
OTEL_BSP_MAX_QUEUE_SIZE = env_otel_queue_size()
STUDIO_OTEL_CAPTURE_CONTENT = env_bool("STUDIO_OTEL_CAPTURE_CONTENT", False)

# GET /metrics (Prometheus): staff signed in or with their API token, or a scraper
# sending this token as "Authorization: Bearer <token>"; empty: no scrape token.
STUDIO_METRICS_TOKEN = env_str("STUDIO_METRICS_TOKEN", "")

# Browser hardening, in every configuration. The pages read the CSRF token from a
# <meta> tag, so no script needs either cookie.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Production: HTTPS only, and the hosts named exactly. Behind a proxy that terminates
# TLS, set STUDIO_SECURE_PROXY_SSL_HEADER=1 and make sure the proxy sets
# X-Forwarded-Proto itself (never passes the client's on).
if PRODUCTION:
    if not ALLOWED_HOSTS or any(host in {"*", ".*"} for host in ALLOWED_HOSTS):
        raise ImproperlyConfigured("STUDIO_ALLOWED_HOSTS must name the site's hosts exactly")
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured("STUDIO_SECRET_KEY must be a random string of 50+ characters")
    if any(not origin.startswith("https://") for origin in CSRF_TRUSTED_ORIGINS):
        raise ImproperlyConfigured("STUDIO_CSRF_TRUSTED_ORIGINS must be https:// origins")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("STUDIO_SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("STUDIO_HSTS_SECONDS", 365 * 24 * 3600, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("STUDIO_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("STUDIO_HSTS_PRELOAD", True)
    if env_bool("STUDIO_SECURE_PROXY_SSL_HEADER", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
