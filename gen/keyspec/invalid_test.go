package keyspec_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

// edit replaces old, which must occur exactly once in the base spec, with new;
// an empty old appends new at the end.
type edit struct{ old, new string }

// invalidCase is testdata/valid.yaml with one deliberate mistake (its edits)
// and the exact first error Parse must report for it, file and line included.
type invalidCase struct {
	name  string
	edits []edit
	want  string
}

// invalidCases are the spec's misuse cases, one family each (docs/keyspec.md,
// "Errors"). New fields add theirs here.
var invalidCases = []invalidCase{
	// issue 20: what the public libraries' scripts need, misused.
	{"derived_from_data_on_cluster", []edit{{"  a:\n    topology: standalone\n", "  a:\n    topology: cluster\n"}, {"    reply: {type: bool, name: stored}\n", "    derived:\n      - {key: t_item, from: data}\n    reply: {type: bool, name: stored}\n"}},
		"keyspec.yaml:62: script \"put\" derived key \"t_item\": on cluster instance a a key whose name the script reads from data may be in any slot, and Redis Cluster refuses a key outside the slot of the script's KEYS (CROSSSLOT): pass the key in KEYS, or store only the id and build the name from a KEYS anchor (from: <position>) that holds the hash tag"},
	{"derived_channel_from_data", []edit{{"    reply: {type: bool, name: stored}\n", "    derived:\n      - {channel: t_news, from: data}\n    reply: {type: bool, name: stored}\n"}},
		"keyspec.yaml:62: script \"put\" derived channel \"t_news\": from data declares a key whose name the script reads from data; a channel the script publishes to is a derived channel from its literal start, or a channel passed in KEYS or ARGV"},
	{"derived_from_data_position_named_data", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: data, one_of: [t_item]}\n"}, {"    reply: {type: bool, name: stored}\n", "    derived:\n      - {key: t_item, from: data}\n    reply: {type: bool, name: stored}\n"}},
		"keyspec.yaml:62: script \"put\" derived key \"t_item\": from \"data\" declares a name read from data, and the script has a KEYS position of that name: rename the position"},
	{"ttl_persist_not_clamped", []edit{{"    ttl: {rule: fixed, value: 1h}\n", "    ttl: {rule: fixed, value: 1h, persist: held until released}\n"}},
		"keyspec.yaml:37: key \"t_item\": ttl persist applies to rule clamped (a TTL the caller chooses, which it may also remove), not to fixed"},
	{"error_code_punctuation", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: bool, name: stored}\n    errors: [{code: \"not-found\"}]\n"}},
		"keyspec.yaml:62: script \"put\": error code \"not-found\": want the reply's first word, [A-Za-z][A-Za-z0-9_]* (NOT_OWNER; the first word of a free-text reply, task for \"task id not found\")"},
	// issue 21: a user the aclfile would grant nothing, and a command listing
	// every deployment's names on an instance with a deployment prefix.
	{"user_prefix_of_another_user", []edit{{"  w:\n", "  v:\n    instance: a\n    select: {allow: false, reason: db0 only}\n    key_prefixes:\n      - {prefix: \"t:item:\", source: test}\n    channel_prefixes:\n      - {prefix: \"t:v:\", source: test}\n  w:\n"}},
		"keyspec.yaml:25: user \"v\": key prefix \"t:item:\" grants key \"t_item\" of a.db0, whose user is u: a key is granted to the user of its database alone, so v would get no key pattern for it (give v a database of its own, or drop the prefix)"},
	{"user_grants_nothing", []edit{{"  w:\n", "  v:\n    instance: a\n    select: {allow: false, reason: db0 only}\n    key_prefixes:\n      - {prefix: \"v:\", source: test}\n  w:\n"}},
		"keyspec.yaml:21: user \"v\": the user of no database of a, with no channel: its aclfile line would grant nothing (name it as a database's user, or drop it)"},
	{"extra_command_lists_keys_of_deployments", []edit{{"    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    deployment_prefix: {env: APP_PREFIX}\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}, {"  w:\n", "    extra_commands:\n      - {command: scan, reason: \"clear the cache with SCAN MATCH\"}\n  w:\n"}},
		"keyspec.yaml:23: user \"u\": extra command \"scan\" lists the key or channel names of every deployment on the server (ACL key patterns do not filter it, and a name may be all another deployment needs): a user of an instance with a deployment prefix holds no such command"},
	{"argv_unknown_type", []edit{{"      - {name: value, type: bytes, max_bytes: 100}\n", "      - {name: value, type: blob, max_bytes: 100}\n"}},
		"keyspec.yaml:59: script \"put\" ARGV[1] \"value\": ARGV type \"blob\" does not exist: want one of int, int64, bool, string, bytes, duration_ms, token, hex, uuid, name, key, enum"},
	{"bad_duration", []edit{{"    ttl: {rule: fixed, value: 1h}\n", "    ttl: {rule: fixed, value: an hour}\n"}},
		"keyspec.yaml:37: key \"t_item\": ttl value: duration \"an hour\": want a Go duration (30s, 24h) or whole days (30d)"},
	{"channel_hash_tag", []edit{{"    pattern: \"t:news\"\n", "    pattern: \"t:news:{{id}}\"\n    params: {id: {type: uuid}}\n"}},
		"keyspec.yaml:49: channel \"t_news\": pattern \"t:news:{{id}}\": a hash tag places a key in a slot; a channel has none"},
	{"channel_outside_prefix", []edit{{"    pattern: \"t:news\"\n", "    pattern: \"z:news\"\n"}},
		"keyspec.yaml:49: channel \"t_news\": pattern \"z:news\" is outside every channel prefix of a's users"},
	{"client_unknown", []edit{{"    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    client: jedis\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}},
		"keyspec.yaml:6: instance \"a\": client \"jedis\": want go-redis or rueidis"},
	{"cluster_cross_slot", []edit{{"    topology: standalone\n    dbs:\n", "    topology: cluster\n    dbs:\n"}, {"    argv:\n", "      - {name: other, one_of: [t_item]}\n    argv:\n"}},
		"keyspec.yaml:52: script \"put\": on cluster instance a its 2 KEYS can land in different hash slots (CROSSSLOT): give every key it takes one hash tag, a fixed one (\"\\{app\\}:...\") or one placeholder's (\"{{id}}\") tied with shared_placeholders: [id] (key \"t_item\" has no hash tag)"},
	{"db_user_other_instance", []edit{{"      db0: {index: 0, url_env: A_URL, user: u}\n", "      db0: {index: 0, url_env: A_URL, user: w}\n"}},
		"keyspec.yaml:7: db a.db0: user \"w\" belongs to another instance"},
	{"deployment_prefix_bad_env", []edit{{"    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    deployment_prefix: {env: app-prefix}\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}},
		"keyspec.yaml:6: instance \"a\": deployment_prefix env \"app-prefix\": want an environment variable name [A-Z][A-Z0-9_]*"},
	{"duplicate_entry", []edit{{"channels:\n", "  t_item:\n    db: a.db0\nchannels:\n"}},
		"keyspec.yaml:46: mapping key \"t_item\" already defined at line 29"},
	{"duplicate_pattern", []edit{{"channels:\n", "  t_other:\n    db: a.db0\n    kind: cache\n    pattern: \"t:item:{id}:{color}\"\n    params:\n      id: {type: uuid}\n      color: {type: enum, enum: color, encode: label}\n    value: [string]\n    ttl: {rule: fixed, value: 1h}\nchannels:\n"}},
		"keyspec.yaml:46: key \"t_other\": duplicate pattern \"t:item:{id}:{color}\": also key \"t_item\" (line 29)"},
	{"enum_label_unsafe", []edit{{"  color: {values: [red, green]}\n", "  color: {values: [red, \"dark:red\"]}\n"}},
		"keyspec.yaml:35: key \"t_item\" placeholder {color}: enum color value \"dark:red\" cannot appear in a key: use encode: sha256"},
	{"extra_command_client_parent", []edit{{"  w:\n", "    extra_commands:\n      - {command: client, reason: \"operators name connections\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"client\" would grant all its subcommands, some never granted (client|kill, client|list, client|no-evict, client|pause, and 2 more): grant client|<subcommand>"},
	{"extra_command_copy", []edit{{"  w:\n", "    extra_commands:\n      - {command: copy, reason: \"COPY can take DB n\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"copy\" is never granted: its DB option writes into another database, which no ACL rule can forbid"},
	{"extra_command_dangerous", []edit{{"  w:\n", "    extra_commands:\n      - {command: flushall, reason: \"tests want it\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"flushall\" is never granted: in Redis's @dangerous ACL category"},
	{"extra_command_parent", []edit{{"  w:\n", "    extra_commands:\n      - {command: script, reason: \"operators list scripts\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"script\" would grant all its subcommands, some never granted (script|debug, script|exists, script|flush, script|help, and 2 more): grant script|<subcommand>"},
	{"extra_command_scripting", []edit{{"  w:\n", "    extra_commands:\n      - {command: eval, reason: \"would run any Lua\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"eval\" is never granted: it runs or manages scripts (@scripting); the generated ACL grants EVALSHA of the declared scripts itself, SCRIPT LOAD only to the loader user"},
	{"extra_command_sub_of_plain", []edit{{"  w:\n", "    extra_commands:\n      - {command: \"get|x\", reason: \"GET has no subcommands\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"get|x\": GET has no subcommands; grant \"get\""},
	{"extra_command_unknown", []edit{{"  w:\n", "    extra_commands:\n      - {command: xyzzy, reason: \"a typo Redis would refuse at startup\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"xyzzy\": Redis 7.0.15 has no such command"},
	{"extra_command_unknown_subcommand", []edit{{"  w:\n", "    extra_commands:\n      - {command: \"script|nope\", reason: \"no such subcommand\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"script|nope\": SCRIPT has no subcommand \"nope\" in Redis 7.0.15 (see COMMAND DOCS script)"},
	{"extra_command_without_reason", []edit{{"  w:\n", "    extra_commands:\n      - {command: \"client|setname\"}\n  w:\n"}},
		"keyspec.yaml:22: user \"u\": extra command \"client|setname\" needs a reason: a hand-added command says why"},
	{"fields_on_string", []edit{{"    ttl: {rule: fixed, value: 1h}\n", "    fields: [a, b]\n    ttl: {rule: fixed, value: 1h}\n"}},
		"keyspec.yaml:37: key \"t_item\": fields apply to a hash (its fields) or a stream (its entries' fields)"},
	{"forbid_two_matchers", []edit{{"    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    forbid: [{kind: lock, value: stream, source: test}]\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}},
		"keyspec.yaml:6: instance \"a\": forbid: set exactly one of kind, value, commands, shape, ttl, unbounded (got 2)"},
	{"hex_with_min", []edit{{"      id: {type: uuid}\n", "      id: {type: hex, len: 8, min: 1}\n"}},
		"keyspec.yaml:34: key \"t_item\" placeholder {id}: min/max does not apply to type hex"},
	{"int_beyond_lua", []edit{{"      n: {type: int, min: 1, max: 10}\n", "      n: {type: int, min: 1, max: 9223372036854775807}\n"}},
		"keyspec.yaml:43: key \"w_item\" placeholder {n}: max 9223372036854775807: Lua numbers hold integers exactly only within \u00b1(2^53-1)"},
	{"key_other_instance", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [w_item]}\n"}},
		"keyspec.yaml:57: script \"put\" KEYS[1] \"item\": key \"w_item\" lives on instance b, the script on a"},
	{"key_outside_prefix", []edit{{"    pattern: \"t:item:{id}:{color}\"\n", "    pattern: \"x:item:{id}:{color}\"\n"}},
		"keyspec.yaml:32: key \"t_item\": pattern \"x:item:{id}:{color}\" is outside every prefix of its owner u (t:*)"},
	{"keys_unknown_key", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_itme]}\n"}},
		"keyspec.yaml:57: script \"put\" KEYS[1] \"item\": key \"t_itme\" is not declared"},
	{"kind_two_words", []edit{{"    kind: cache\n    pattern: \"t:item:{id}:{color}\"\n", "    kind: hot cache\n    pattern: \"t:item:{id}:{color}\"\n"}},
		"keyspec.yaml:31: key \"t_item\": kind \"hot cache\": want one word of [A-Za-z0-9_.-] (forbid rules match it exactly)"},
	{"missing_ttl", []edit{{"    ttl: {rule: fixed, value: 1h}\n", "\n"}},
		"keyspec.yaml:29: key \"t_item\": ttl is missing: declare how the key expires (fixed, window_jitter, heartbeat, clamped or none; a key kept until a script deletes it: {rule: none, reason: ...})"},
	{"optional_ttl_of", []edit{{"      - {name: ttl, type: duration_ms, ttl_of: t_item}\n", "      - {name: ttl, type: duration_ms, ttl_of: t_item, optional: true}\n"}},
		"keyspec.yaml:60: script \"put\" ARGV[2] \"ttl\": optional does not apply with ttl_of: the wrapper always sends the key's TTL"},
	{"overlap_int_hex", []edit{{"channels:\n", "  w_hex:\n    db: b.db0\n    kind: cache\n    pattern: \"w:item:{h}\"\n    params:\n      h: {type: hex, len: 2}\n    value: [string]\n    ttl: {rule: fixed, value: 1h}\nchannels:\n"}},
		"keyspec.yaml:46: key \"w_hex\": pattern \"w:item:{h}\" overlaps key \"w_item\" (line 38): both match \"w:item:10\""},
	{"overlapping_pattern", []edit{{"channels:\n", "  t_other:\n    db: a.db0\n    kind: cache\n    pattern: \"t:item:{id}:{tone}\"\n    params:\n      id: {type: uuid}\n      tone: {type: name, max_len: 8}\n    value: [string]\n    ttl: {rule: fixed, value: 1h}\nchannels:\n"}},
		"keyspec.yaml:46: key \"t_other\": pattern \"t:item:{id}:{tone}\" overlaps key \"t_item\" (line 29): both match \"t:item:00000000-0000-0000-0000-000000000000:red\""},
	{"placeholder_type_missing", []edit{{"      id: {type: uuid}\n", "      id: {doc: no type here}\n"}},
		"keyspec.yaml:34: key \"t_item\" placeholder {id}: type is missing: want one of uuid, int, hex, name, path, enum, sha256, hmac"},
	{"placeholder_without_type", []edit{{"    pattern: \"t:item:{id}:{color}\"\n", "    pattern: \"t:item:{id}:{color}:{size}\"\n"}},
		"keyspec.yaml:32: key \"t_item\": pattern \"t:item:{id}:{color}:{size}\": placeholder {size} has no type: declare it under params"},
	{"prefix_empty_no_deployment", []edit{{"      - {prefix: \"t:\", source: test}\n    channel_prefixes:\n", "      - {prefix: \"\", source: test}\n    channel_prefixes:\n"}},
		"keyspec.yaml:18: user \"u\": prefix is empty: only an instance with a deployment_prefix may grant all of it with \"\""},
	{"prefix_without_reason", []edit{{"      - {prefix: \"t:\", source: test}\n    channel_prefixes:\n", "      - {prefix: \"t:\"}\n    channel_prefixes:\n"}},
		"keyspec.yaml:18: user \"u\": prefix \"t:\": say where it comes from (source) or why it is granted (reason)"},
	{"replay_safe_read_only", []edit{{"    replay_safe: \"  a second SET of the same value and TTL leaves the same state  \"\n", "    read_only: true\n    replay_safe: a read-only script\n"}},
		"keyspec.yaml:56: script \"put\": replay_safe on a read_only script: a script that writes nothing is safe to replay already; drop replay_safe"},
	{"reply_list_without_fields", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: list, name: stored}\n"}},
		"keyspec.yaml:61: script \"put\" reply \"stored\": a list needs fields (each element an array of them) or of (each element one value of that type)"},
	{"reply_list_of_with_fields", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: list, name: stored, of: int, fields: [{name: n, type: int}]}\n"}},
		"keyspec.yaml:61: script \"put\" reply \"stored\": a list has of (each element one value) or fields (each element an array of them), not both"},
	{"reply_of_on_scalar", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: int, name: stored, of: int}\n"}},
		"keyspec.yaml:61: script \"put\" reply \"stored\": of applies only to type list (a list whose elements are each one value)"},
	{"reply_list_of_unknown", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: list, name: stored, of: float}\n"}},
		"keyspec.yaml:61: script \"put\" reply \"stored\": list element type \"float\" does not exist: want one of int, bool, string, bytes, duration_ms, time_ms, enum, strings"},
	{"reply_list_of_list", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: list, name: stored, of: list}\n"}},
		"keyspec.yaml:61: script \"put\" reply \"stored\": of: list: a list of lists nests no deeper than of: strings; for elements that are arrays of other values, declare fields"},
	{"reply_list_of_enum_unnamed", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: list, name: stored, of: enum}\n"}},
		"keyspec.yaml:61: script \"put\" reply \"stored\": a list of: enum names its enum (enum: <name>)"},
	{"reply_field_list_of_list", []edit{{"    reply: {type: bool, name: stored}\n", "    reply:\n      fields:\n        - {name: n, type: int}\n        - {name: ids, type: list, of: list}\n"}},
		"keyspec.yaml:64: script \"put\" reply \"ids\": of: list: a list of lists nests no deeper than of: strings; for elements that are arrays of other values, declare fields"},
	{"reply_fields_with_of", []edit{{"    reply: {type: bool, name: stored}\n", "    reply:\n      of: int\n      fields:\n        - {name: n, type: int}\n"}},
		"keyspec.yaml:62: script \"put\": of applies only to type list (a list whose elements are each one value)"},
	{"reply_strings_field", []edit{{"    reply: {type: bool, name: stored}\n", "    reply:\n      fields:\n        - {name: ids, type: strings}\n"}},
		"keyspec.yaml:63: script \"put\" reply \"ids\": strings is a whole reply, not a field of one (a field holding a list of strings: type list, of: string)"},
	{"reply_missing", []edit{{"    reply: {type: bool, name: stored}\n", "\n"}},
		"keyspec.yaml:52: script \"put\": reply is missing: declare its fields, or its type and name"},
	{"reply_type_unknown", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: float, name: stored}\n"}},
		"keyspec.yaml:61: script \"put\" reply \"stored\": reply type \"float\" does not exist: want one of int, bool, string, bytes, duration_ms, time_ms, enum, strings, list"},
	{"second_document", []edit{{"    reply: {type: bool, name: stored}\n", "    reply: {type: bool, name: stored}\n---\nversion: 1\n"}},
		"keyspec.yaml:62: a second YAML document ('---'): a spec is one document; everything after the first would be ignored"},
	{"seed_and_source", []edit{{"    db: a.db0\n", "    seed: old\n    source: new\n    db: a.db0\n"}},
		"keyspec.yaml:29: key \"t_item\": seed and source are both set: seed is the old name of source; keep source"},
	{"server_bad_policy", []edit{{"    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    server:\n      persistence: {mode: aof_everysec, source: test}\n      eviction: {policy: lru, reason: test}\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}},
		"keyspec.yaml:8: instance \"a\": eviction policy \"lru\": want one of allkeys-lfu, allkeys-lru, allkeys-random, noeviction, volatile-lfu, volatile-lru, volatile-random, volatile-ttl"},
	{"server_split_cluster", []edit{{"    topology: standalone\n    dbs:\n", "    topology: cluster\n    servers:\n      side:\n        persistence: {mode: none, source: test}\n        eviction: {policy: allkeys-lru, reason: test}\n    server:\n      persistence: {mode: aof_everysec, source: test}\n      eviction: {policy: noeviction, reason: test}\n    dbs:\n"}},
		"keyspec.yaml:6: instance \"a\": servers: a cluster instance is one cluster; to split it, declare another instance"},
	{"server_undeclared", []edit{{"    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    server:\n      persistence: {mode: aof_everysec, source: test}\n      eviction: {policy: noeviction, reason: test}\n    servers:\n      side:\n        persistence: {mode: none, source: test}\n        eviction: {policy: allkeys-lru, reason: test}\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}, {"  b:\n", "      db1: {index: 1, url_env: A1_URL, user: u, server: side}\n      db2: {index: 2, url_env: A2_URL, user: u, server: sidee}\n  b:\n"}},
		"keyspec.yaml:16: db a.db2: server \"sidee\" is not declared under a's servers"},
	{"server_without_db", []edit{{"    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    server:\n      persistence: {mode: aof_everysec, source: test}\n      eviction: {policy: noeviction, reason: test}\n    servers:\n      side:\n        persistence: {mode: none, source: test}\n        eviction: {policy: allkeys-lru, reason: test}\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}},
		"keyspec.yaml:10: instance \"a\": server \"side\" holds no database: put server: side on the databases it holds, or remove it"},
	{"shared_one_position", []edit{{"    argv:\n", "    shared_placeholders: [id]\n    argv:\n"}},
		"keyspec.yaml:58: script \"put\": shared placeholder {id} is in 1 KEYS position(s): sharing ties two or more (or the elements of a repeating one)"},
	{"string_unbounded", []edit{{"      - {name: value, type: bytes, max_bytes: 100}\n", "      - {name: value, type: bytes}\n"}},
		"keyspec.yaml:59: script \"put\" ARGV[1] \"value\": max_bytes is missing: every value crossing Redis is size-limited"},
	{"ttl_exceeds_above_max", []edit{{"    ttl: {rule: fixed, value: 1h}\n", "    ttl: {rule: fixed, value: 1h, max: 1h, exceeds: 2h}\n"}},
		"keyspec.yaml:37: key \"t_item\": ttl exceeds 2h leaves no value at or below max 1h"},
	{"ttl_none_without_reason", []edit{{"    value: [string]\n    ttl: {rule: fixed, value: 1h}\n", "    value: [list]\n    max_len: 10\n    ttl: {rule: none}\n"}},
		"keyspec.yaml:38: key \"t_item\": ttl none needs a reason: why the key never expires"},
	{"ttl_of_window", []edit{{"      - {name: ttl, type: duration_ms, ttl_of: t_item}\n", "      - {name: ttl, type: duration_ms, ttl_of: w_item}\n"}},
		"keyspec.yaml:60: script \"put\" ARGV[2] \"ttl\": ttl_of key \"w_item\" has a clamped TTL; only fixed and heartbeat TTLs are constants"},
	{"ttl_source_renamed", []edit{{"    ttl: {rule: clamped, max: 30d}\n", "    ttl: {rule: clamped, max: 30d, source: dns_answer}\n"}},
		"keyspec.yaml:45: field source not found in ttl: a clamped TTL's origin is now from (from: the DNS answer); the key's source says where its bounds come from"},
	{"two_hash_tags", []edit{{"    pattern: \"t:item:{id}:{color}\"\n", "    pattern: \"t:item:{{id}}:{{color}}\"\n"}},
		"keyspec.yaml:32: key \"t_item\": pattern \"t:item:{{id}}:{{color}}\": a second hash tag: Redis hashes only the first {...} of a name, so a pattern has at most one"},
	{"unknown_enum", []edit{{"      color: {type: enum, enum: color, encode: label}\n", "      color: {type: enum, enum: colour, encode: label}\n"}},
		"keyspec.yaml:35: key \"t_item\" placeholder {color}: enum \"colour\" is not declared"},
	{"unknown_field", []edit{{"    kind: cache\n    pattern: \"t:item:{id}:{color}\"\n", "    colour: red\n    kind: cache\n    pattern: \"t:item:{id}:{color}\"\n"}},
		"keyspec.yaml:31: field colour not found in a key"},
	{"yaml_syntax", []edit{{"      - {prefix: \"t:\", source: test}\n  w:\n", "      - {prefix: \"t:\", source: test\n  w:\n"}},
		"keyspec.yaml:19: did not find expected ',' or '}'"},
	{"forbid_ttl_unknown", []edit{{"    topology: standalone\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n", "    topology: standalone\n    forbid: [{ttl: always, source: test}]\n    dbs:\n      db0: {index: 0, url_env: A_URL, user: u}\n"}},
		"keyspec.yaml:6: instance \"a\": forbid ttl \"always\": want none (every key expires) or unbounded (a key that never expires declares a bound)"},
	{"forbid_unbounded_hash", []edit{{"", "forbid: [{unbounded: hash, source: test}]\n"}},
		"keyspec.yaml:62: forbid unbounded \"hash\": want stream or list (the value types with a bound: max_len, retention)"},
	{"forbid_spec_wide_two_matchers", []edit{{"", "forbid: [{ttl: none, value: stream, source: test}]\n"}},
		"keyspec.yaml:62: forbid: set exactly one of kind, value, commands, shape, ttl, unbounded (got 2)"},
	{"pattern_tag_splits_placeholder", []edit{{"    pattern: \"t:item:{id}:{color}\"\n", "    pattern: \"t:item:{i\\\\}d}:{color}\"\n"}},
		"keyspec.yaml:32: key \"t_item\": pattern \"t:item:{i\\\\}d}:{color}\": a hash tag brace inside placeholder {i: a tag cannot split a placeholder; put the placeholder wholly inside the tag (\\{{id}\\}) or outside it"},
	{"pattern_placeholders_touch", []edit{{"    pattern: \"t:item:{id}:{color}\"\n", "    pattern: \"t:item:{id}{color}\"\n"}},
		"keyspec.yaml:32: key \"t_item\": pattern \"t:item:{id}{color}\": placeholders {id} and {color} touch: put literal text between them, so that a name reads back one way"},
	{"pattern_ambiguous", []edit{{"      n: {type: int, min: 1, max: 10}\n", "      n: {type: int, min: 1, max: 10}\n      m: {type: int, min: 1, max: 10}\n"}, {"    pattern: \"w:item:{n}\"\n", "    pattern: \"w:item:{n}-{m}\"\n"}},
		"keyspec.yaml:41: key \"w_item\": pattern \"w:item:{n}-{m}\": placeholder {n} is followed by \"-\", and its values may hold \"-\": a name could be read two ways, so two calls with different values could share a key; end {n} with a byte its values never hold (':' for all but a path), or make it the last placeholder"},
	{"pattern_unclosed_tag", []edit{{"    pattern: \"t:item:{id}:{color}\"\n", "    pattern: 't:item:\\{{id}:{color}'\n"}},
		"keyspec.yaml:32: key \"t_item\": pattern \"t:item:\\\\{{id}:{color}\": a hash tag \\{ without its \\}: Redis would hash the whole name"},
	{"path_too_long", []edit{{"      n: {type: int, min: 1, max: 10}\n", "      n: {type: path, max_len: 1000}\n"}},
		"keyspec.yaml:43: key \"w_item\" placeholder {n}: max_len 1000: want 1..512"},
	{"keys_repeat_not_last", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item], repeat: {min: 1, max: 4}}\n      - {name: other, one_of: [t_item]}\n"}},
		"keyspec.yaml:57: script \"put\" KEYS[1] \"item\": repeat on a position that is not the last: only the trailing position may repeat (the script reads the ones after it at fixed indexes)"},
	{"keys_repeat_without_max", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item], repeat: {min: 1}}\n"}},
		"keyspec.yaml:57: script \"put\" KEYS[1] \"item\": repeat max is missing: the most values a call passes (at most 7999, what Lua's unpack returns)"},
	{"keys_repeat_zero", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item], repeat: {min: 0, max: 4}}\n"}},
		"keyspec.yaml:57: script \"put\" KEYS[1] \"item\": repeat min 0: want at least 1"},
	{"keys_repeat_beyond_unpack", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item], repeat: {max: 100000}}\n"}},
		"keyspec.yaml:57: script \"put\" KEYS[1] \"item\": repeat max 100000: at most 7999, what Lua's unpack returns"},
	{"keys_unused_without_reason", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item], unused: {reason: \"\"}}\n"}},
		"keyspec.yaml:57: script \"put\" KEYS[1] \"item\": unused needs a reason: why callers pass a key the script never reads"},
	{"keys_channel_and_one_of", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item]}\n      - {name: news, one_of: [t_item], channel: t_news}\n"}},
		"keyspec.yaml:58: script \"put\" KEYS[2] \"news\": one_of and channel: a position passes a key or a channel's name, not both"},
	{"keys_channel_undeclared", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item]}\n      - {name: news, channel: t_newz}\n"}},
		"keyspec.yaml:58: script \"put\" KEYS[2] \"news\": channel \"t_newz\" is not declared"},
	{"argv_repeat_not_last", []edit{{"      - {name: value, type: bytes, max_bytes: 100}\n", "      - {name: value, type: bytes, max_bytes: 100, repeat: {max: 3}}\n"}},
		"keyspec.yaml:59: script \"put\" ARGV[1] \"value\": repeat on a position that is not the last: only the trailing position may repeat (the script reads the ones after it at fixed indexes)"},
	{"argv_repeat_optional", []edit{{"      - {name: ttl, type: duration_ms, ttl_of: t_item}\n", "      - {name: ttl, type: duration_ms, ttl_of: t_item}\n      - {name: more, type: name, optional: true, repeat: {max: 3}}\n"}},
		"keyspec.yaml:61: script \"put\" ARGV[3] \"more\": repeat does not combine with optional, ttl_of, max_len_of or unused (repeat min 0 lets the caller leave it out)"},
	{"argv_unused_with_type", []edit{{"      - {name: value, type: bytes, max_bytes: 100}\n", "      - {name: value, type: bytes, max_bytes: 100, unused: {reason: old callers}}\n"}},
		"keyspec.yaml:59: script \"put\" ARGV[1] \"value\": an unused or channel argument has no type or bounds of its own: drop type, min, max, max_bytes, len, max_len, ttl_of, max_len_of, optional"},
	{"argv_channel_other_instance", []edit{{"      - {name: ttl, type: duration_ms, ttl_of: t_item}\n", "      - {name: ttl, type: duration_ms, ttl_of: t_item}\n      - {name: to, channel: w_news}\n"}, {"channels:\n", "channels:\n  w_news: {instance: b, pattern: \"w:news\", max_bytes: 10}\n"}, {"      - {prefix: \"w:\", source: test}\n", "      - {prefix: \"w:\", source: test}\n    channel_prefixes: [{prefix: \"w:\", source: test}]\n"}},
		"keyspec.yaml:63: script \"put\" ARGV[3] \"to\": channel \"w_news\" is of instance b, the script on a"},
	{"argv_max_len_of_unbounded", []edit{{"      - {name: ttl, type: duration_ms, ttl_of: t_item}\n", "      - {name: ttl, type: duration_ms, ttl_of: t_item}\n      - {name: keep, type: int, max_len_of: t_item}\n"}},
		"keyspec.yaml:61: script \"put\" ARGV[3] \"keep\": max_len_of key \"t_item\" declares no max_len"},
	{"argv_int64_bound", []edit{{"      - {name: value, type: bytes, max_bytes: 100}\n", "      - {name: value, type: int64, max: 99999999999999999999}\n"}},
		"keyspec.yaml:59: script \"put\" ARGV[1] \"value\": max \"99999999999999999999\" is not a 64-bit integer"},
	{"reply_by_arg_unknown", []edit{{"    reply: {type: bool, name: stored}\n", "    reply:\n      by_arg: mode\n      shapes:\n        a: {type: bool, name: stored}\n        b: {type: int, name: n}\n"}},
		"keyspec.yaml:62: script \"put\": by_arg \"mode\" is not an ARGV of the script"},
	{"reply_by_arg_bytes", []edit{{"    reply: {type: bool, name: stored}\n", "    reply:\n      by_arg: value\n      shapes:\n        a: {type: bool, name: stored}\n        b: {type: int, name: n}\n"}},
		"keyspec.yaml:62: script \"put\": by_arg \"value\" is a bytes argument: the argument that chooses the shape is a name or string, neither optional nor repeating"},
	{"reply_shapes_without_by_arg", []edit{{"    reply: {type: bool, name: stored}\n", "    reply:\n      shapes:\n        a: {type: bool, name: stored}\n"}},
		"keyspec.yaml:61: script \"put\": shapes need by_arg: the argument whose value chooses the shape"},
	{"script_instance_mismatch", []edit{{"  put:\n    instance: a\n", "  b.put:\n    instance: a\n"}},
		"keyspec.yaml:53: script \"b.put\": instance \"a\", but the entry's name says b (instance.name): drop instance, or rename the entry"},
	{"script_twice_on_instance", []edit{{"  put:\n    instance: a\n", "  a.other:\n    keys: [{name: item, one_of: [t_item]}]\n    reply: {type: int, name: n}\n  put:\n    instance: a\n"}, {"  a.other:\n", "  a.put:\n"}},
		"keyspec.yaml:55: script \"put\": instance a has script \"put\" twice (also entry \"a.put\")"},
	{"script_instance_missing", []edit{{"  put:\n    instance: a\n", "  put:\n"}},
		"keyspec.yaml:52: script \"put\": instance is missing: name the instance it runs on (instance: ...), or write the entry as instance.name"},
	{"channel_outside_script_user", []edit{{"      - {prefix: \"w:\", source: test}\n", "      - {prefix: \"w:\", source: test}\n    channel_prefixes: [{prefix: \"w:\", source: test}]\n"}, {"channels:\n", "channels:\n  w_news: {instance: b, pattern: \"w:news\", max_bytes: 10}\n  t_other: {instance: a, pattern: \"t:other\", max_bytes: 10}\n"}, {"    channel_prefixes:\n      - {prefix: \"t:\", source: test}\n", "    channel_prefixes:\n      - {prefix: \"t:news\", source: test}\n  v:\n    instance: a\n    select: {allow: false, reason: db0 only}\n    key_prefixes: [{prefix: \"v:\", source: test}]\n    channel_prefixes: [{prefix: \"t:other\", source: test}]\n"}, {"      - {name: ttl, type: duration_ms, ttl_of: t_item}\n", "      - {name: ttl, type: duration_ms, ttl_of: t_item}\n      - {name: to, channel: t_other}\n"}},
		"keyspec.yaml:60: script \"put\": publishes to channel \"t_other\" (t:other), outside every channel prefix of its user u: grant the user a channel prefix covering it"},
	{"channel_in_keys_not_a_key", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item]}\n      - {name: news, channel: t_ev}\n"}, {"channels:\n", "channels:\n  t_ev: {instance: a, pattern: \"ev:x\", max_bytes: 10}\n"}, {"    channel_prefixes:\n      - {prefix: \"t:\", source: test}\n", "    channel_prefixes:\n      - {prefix: \"t:\", source: test}\n      - {prefix: \"ev:\", source: test}\n"}},
		"keyspec.yaml:54: script \"put\": passes channel \"t_ev\" (ev:x) in KEYS, and EVALSHA checks every KEYS element against the key patterns of user u, none of which covers it: grant a key prefix covering it, or pass the channel in ARGV"},
	{"keys_empty", []edit{{"    keys:\n      - {name: item, one_of: [t_item]}\n", "    keys: []\n"}},
		"keyspec.yaml:52: script \"put\": keys is empty: a script touches only the keys passed in KEYS (one that only publishes takes its channels in KEYS or ARGV)"},
}

// apply makes a case's spec from the base, failing when an edit does not
// match exactly once (the base changed under it).
func (c invalidCase) apply(t *testing.T, base string) string {
	t.Helper()
	out := base
	for _, e := range c.edits {
		if e.old == "" {
			out += e.new
			continue
		}
		if n := strings.Count(out, e.old); n != 1 {
			t.Fatalf("edit %q matches %d times in the base spec, want once", e.old, n)
		}
		out = strings.Replace(out, e.old, e.new, 1)
	}
	return out
}

func TestInvalidSpecsNameFileLineAndEntry(t *testing.T) {
	base, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyspec.Parse("keyspec.yaml", base); err != nil {
		t.Fatalf("the base spec does not parse: %v", err)
	}
	names := map[string]bool{}
	for _, c := range invalidCases {
		if names[c.name] {
			t.Fatalf("case %s twice", c.name)
		}
		names[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			src := c.apply(t, string(base))
			spec, err := keyspec.Parse("keyspec.yaml", []byte(src))
			if err == nil {
				t.Fatalf("parsed without error: %d keys", len(spec.Keys))
			}
			if !errors.Is(err, keyspec.ErrInvalid) {
				t.Errorf("error does not match ErrInvalid: %v", err)
			}
			if got, _, _ := strings.Cut(err.Error(), "\n"); got != c.want {
				t.Errorf("first error:\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}
