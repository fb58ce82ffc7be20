"""Every diagnostic and error code stoprule gives, by name (``docs/policy-language.md`` and
``docs/cli.md`` say what each means). A code is part of the output contract: scripts and
tests match on it, so it is spelt once, here, and used by name (``codes.FACT_TYPE``).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

# policy.*: a pack's YAML against the policy schema (language.spec) and a fact no rule decides
POLICY_BAD_VALUE = "policy.bad_value"
POLICY_MISSING_KEY = "policy.missing_key"
POLICY_NO_RULE = "policy.no_rule"
POLICY_NOT_MAPPING = "policy.not_mapping"
POLICY_TYPE = "policy.type"
POLICY_UNKNOWN_KEY = "policy.unknown_key"

# config.*: a config file (config.loader, config.source, config.freeze)
CONFIG_FROZEN_DAMAGED = "config.frozen_damaged"
CONFIG_INVALID = "config.invalid"
CONFIG_NOT_MAPPING = "config.not_mapping"
CONFIG_UNKNOWN_KEY = "config.unknown_key"
CONFIG_UNREADABLE = "config.unreadable"

# yaml.*: a pack's or config's YAML text (language.source)
YAML_DUPLICATE_KEY = "yaml.duplicate_key"
YAML_ENCODING = "yaml.encoding"
YAML_RECURSIVE_ALIAS = "yaml.recursive_alias"
YAML_SYNTAX = "yaml.syntax"
YAML_VALUE = "yaml.value"

# field.*: a condition names a field the fact schema does not declare
FIELD_UNKNOWN = "field.unknown"

# limit.*: a pack beyond a limit of stoprule.limits (language, engine)
LIMIT_ALTERNATIVES = "limit.alternatives"
LIMIT_CONDITION_DEPTH = "limit.condition_depth"
LIMIT_CONDITION_SIZE = "limit.condition_size"
LIMIT_FACT_PROPERTIES = "limit.fact_properties"
LIMIT_FILE_SIZE = "limit.file_size"
LIMIT_GLOB_CLASS = "limit.glob_class"
LIMIT_GLOB_STARS = "limit.glob_stars"
LIMIT_INTEGER = "limit.integer"
LIMIT_LITERAL_LENGTH = "limit.literal_length"
LIMIT_PACK_FILES = "limit.pack_files"
LIMIT_PACK_SIZE = "limit.pack_size"
LIMIT_RULES = "limit.rules"
LIMIT_SET_MEMBERS = "limit.set_members"
LIMIT_YAML_DEPTH = "limit.yaml_depth"
LIMIT_YAML_NODES = "limit.yaml_nodes"

# fact.*: a fact that does not parse or validate (facts.parse, facts.schema)
FACT_DUPLICATE_FIELD = "fact.duplicate_field"
FACT_DUPLICATE_KEY = "fact.duplicate_key"
FACT_EMPTY = "fact.empty"
FACT_ENCODING = "fact.encoding"
FACT_ENUM = "fact.enum"
FACT_NOT_JSON = "fact.not_json"
FACT_NOT_OBJECT = "fact.not_object"
FACT_NULL = "fact.null"
FACT_RANGE = "fact.range"
FACT_REQUIRED = "fact.required"
FACT_STRING = "fact.string"
FACT_TOO_DEEP = "fact.too_deep"
FACT_TOO_LARGE = "fact.too_large"
FACT_TYPE = "fact.type"
FACT_UNKNOWN_FIELD = "fact.unknown_field"

# cases.*: a pack's case files (analysis.cases)
CASES_CONFLICT = "cases.conflict"
CASES_DUPLICATE_NAME = "cases.duplicate_name"
CASES_MISSING = "cases.missing"
CASES_NOT_FOUND = "cases.not_found"
CASES_TYPE = "cases.type"
CASES_UNKNOWN_FIELD = "cases.unknown_field"
CASES_UNKNOWN_KEY = "cases.unknown_key"
CASES_UNKNOWN_NAME = "cases.unknown_name"
CASES_UNREADABLE = "cases.unreadable"

# set.*: a reference to a named set that does not exist
SET_UNKNOWN = "set.unknown"

# condition.*: a condition that does not check or lower
CONDITION_CYCLE = "condition.cycle"
CONDITION_NESTED_LIST = "condition.nested_list"
CONDITION_SYNTAX = "condition.syntax"
CONDITION_TOO_COMPLEX = "condition.too_complex"
CONDITION_TYPE = "condition.type"
CONDITION_UNKNOWN = "condition.unknown"
CONDITION_UNKNOWN_OPERATOR = "condition.unknown_operator"
CONDITION_UNSUPPORTED = "condition.unsupported"

# schema.*: the pack's fact schema itself
SCHEMA_ALIAS = "schema.alias"
SCHEMA_BAD_NAME = "schema.bad_name"
SCHEMA_DEFAULT = "schema.default"
SCHEMA_ENUM_VALUES = "schema.enum_values"
SCHEMA_LIST_ITEMS = "schema.list_items"
SCHEMA_OBJECT_FIELDS = "schema.object_fields"
SCHEMA_REQUIRED_IF = "schema.required_if"
SCHEMA_UNEXPECTED = "schema.unexpected"

# template.*: a message template
TEMPLATE_SYNTAX = "template.syntax"
TEMPLATE_UNKNOWN_FIELD = "template.unknown_field"
TEMPLATE_UNKNOWN_SET = "template.unknown_set"

# verdict.*: a rule names a verdict kind the pack does not declare
VERDICT_UNKNOWN = "verdict.unknown"

# pack.*: a pack directory that does not load
PACK_EMPTY = "pack.empty"
PACK_NO_RULES = "pack.no_rules"
PACK_NOT_FOUND = "pack.not_found"
PACK_UNREADABLE = "pack.unreadable"

# audit.*: an analysis beyond what it represents exactly
AUDIT_LIMIT = "audit.limit"

# engine.*: what the durable_rules engine refuses
ENGINE_REJECTED = "engine.rejected"

# duplicate.*: a name declared twice
DUPLICATE_FIELD = "duplicate.field"
DUPLICATE_HIGH_RISK_STOP = "duplicate.high_risk_stop"
DUPLICATE_RULE = "duplicate.rule"

# high_risk_stop.*: the high-risk stop declarations
HIGH_RISK_STOP_NONE = "high_risk_stop.none"
HIGH_RISK_STOP_RECURSIVE = "high_risk_stop.recursive"

# internal.*: a bug in stoprule (reported, never a crash)
INTERNAL_ERROR = "internal.error"

# server.*: a decision service that cannot be asked (agent.hook.remote)
SERVER_BAD_ANSWER = "server.bad_answer"
SERVER_BAD_URL = "server.bad_url"
SERVER_TIMEOUT = "server.timeout"
SERVER_UNREACHABLE = "server.unreachable"

# ledger.*: the ledger: opening, reading, appending (ledger/)
LEDGER_ACTIVE_KEY = "ledger.active_key"
LEDGER_BAD_RUN_ID = "ledger.bad_run_id"
LEDGER_BUSY = "ledger.busy"
LEDGER_CANNOT_OPEN = "ledger.cannot_open"
LEDGER_CORRUPT = "ledger.corrupt"
LEDGER_ERROR = "ledger.error"
LEDGER_IMPORT = "ledger.import"
LEDGER_IO = "ledger.io"
LEDGER_KEYS_CORRUPT = "ledger.keys_corrupt"
LEDGER_KEYS_EXPOSED = "ledger.keys_exposed"
LEDGER_KEYS_UNREADABLE = "ledger.keys_unreadable"
LEDGER_KEYS_UNWRITABLE = "ledger.keys_unwritable"
LEDGER_MISSING = "ledger.missing"
LEDGER_NOT_A_LEDGER = "ledger.not_a_ledger"
LEDGER_NOT_YOURS = "ledger.not_yours"
LEDGER_NO_DIRECTORY = "ledger.no_directory"
LEDGER_NO_KEYS = "ledger.no_keys"
LEDGER_OLD_SCHEMA = "ledger.old_schema"
LEDGER_READ_ONLY = "ledger.read_only"
LEDGER_TOO_NEW = "ledger.too_new"
LEDGER_UNAVAILABLE = "ledger.unavailable"
LEDGER_UNKNOWN_KEY = "ledger.unknown_key"
LEDGER_UNKNOWN_NODE = "ledger.unknown_node"
LEDGER_UNKNOWN_RUN = "ledger.unknown_run"

# token.*: a retry token refused (ledger/tokens, ledger/recorder)
TOKEN_CONSUMED = "token.consumed"
TOKEN_FOREIGN_RUN = "token.foreign_run"
TOKEN_FORGED = "token.forged"
TOKEN_MALFORMED = "token.malformed"
TOKEN_NOT_BLOCKED = "token.not_blocked"
TOKEN_RETIRED_KEY = "token.retired_key"
TOKEN_STALE = "token.stale"
TOKEN_TERMINAL = "token.terminal"
TOKEN_TRUNCATED = "token.truncated"
TOKEN_UNKNOWN_KEY = "token.unknown_key"
TOKEN_UNKNOWN_NODE = "token.unknown_node"

# serve.*: a request the decision service refuses (serve/app)
SERVE_BAD_JSON = "serve.bad_json"
SERVE_BATCH_TOO_LARGE = "serve.batch_too_large"
SERVE_FORBIDDEN = "serve.forbidden"
SERVE_HTTP = "serve.http"
SERVE_INTERNAL = "serve.internal"
SERVE_METHOD = "serve.method"
SERVE_NOT_FOUND = "serve.not_found"
SERVE_NO_LEDGER = "serve.no_ledger"
SERVE_NO_TEAM_STORE = "serve.no_team_store"
SERVE_ONE_FACT = "serve.one_fact"
SERVE_TIMEOUT = "serve.timeout"
SERVE_TOO_LARGE = "serve.too_large"
SERVE_UNAUTHORIZED = "serve.unauthorized"
SERVE_UNKNOWN_HARNESS = "serve.unknown_harness"
SERVE_USAGE = "serve.usage"

# hook.*: a hook payload the decision service cannot parse (serve/app; the hook itself never errs)
HOOK_PAYLOAD = "hook.payload"
