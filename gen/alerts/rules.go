package alerts

import (
	"fmt"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
)

// target is the output labels of an expression over one exporter target (the
// own server of a split instance has no luagen_server label: an empty label
// is no label).
func (r *rules) target() map[string]string {
	m := map[string]string{"instance": "redis:9121", "job": "redis", "luagen_instance": r.in.Name}
	if r.srv.Name != "" {
		m["luagen_server"] = r.srv.Name
	}
	return m
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// redis: the server itself.
func (r *rules) redis() []*Rule {
	srv, in := r.srv, r.in
	srvSrc := r.src(in.Pos, "instances."+in.Name)
	if srv.Name != "" {
		srvSrc = r.src(srv.Pos, "instances."+in.Name+".servers."+srv.Name)
	}
	var out []*Rule
	out = append(out, r.alert("RedisDown", "critical", srvSrc,
		fmt.Sprintf("redis_up%s == 0", r.s()), time.Minute,
		"Redis of "+in.Name+" does not answer the exporter",
		"Check the redis-server process and its log; the services run degraded (caches miss, limiters fall back) until it is back.",
		&probe{fire: []series{{"redis_up" + r.targetLabels(), "0x40"}}, quiet: []series{{"redis_up" + r.targetLabels(), "1x40"}}, want: r.target()}))

	// Memory: the deployed maxmemory when set, else the budget.
	budget, budgetSrc := r.o.SizingMaxmemoryBytes, r.o.SizingSource
	switch {
	case r.o.MaxmemoryBytes > 0:
		budget, budgetSrc = r.o.MaxmemoryBytes, "the deployed maxmemory (--maxmemory)"
	case budget > 0:
		budgetSrc = "luagen sizing's maxmemory (" + budgetSrc + ")"
	default:
		budget = DefaultBudgetBytes
		budgetSrc = fmt.Sprintf("the declared default budget %s (no maxmemory, no sizing report)", human(DefaultBudgetBytes))
		r.notes = append(r.notes, Note{Source: r.src(srv.Pos, "instances."+in.Name+".server"),
			Msg: fmt.Sprintf("no maxmemory and no sizing report: the memory rules count against the declared default %s until maxmemory is set (the exporter's redis_memory_max_bytes, once non-zero, wins) or `luagen sizing --format json` gives the estimate (--sizing-report)", human(DefaultBudgetBytes))})
	}
	memSrc := r.src(srv.Pos, "instances."+in.Name+".server")
	if len(srv.TBD) > 0 {
		memSrc += " (maxmemory TBD: " + srv.TBD[0] + ")"
	}
	memSrc += "; budget: " + budgetSrc
	mem := func(share float64) string {
		return fmt.Sprintf("redis_memory_used_bytes%[1]s / ((redis_memory_max_bytes%[1]s > 0) or (redis_memory_max_bytes%[1]s * 0 + %[2]d)) > %[3]g", r.s(), budget, share)
	}
	memProbe := func(share float64) *probe {
		used := int64(float64(budget)*share) + (budget / 50)
		return &probe{fire: []series{{"redis_memory_used_bytes" + r.targetLabels(), fmt.Sprintf("%dx40", used)}, {"redis_memory_max_bytes" + r.targetLabels(), "0x40"}},
			quiet: []series{{"redis_memory_used_bytes" + r.targetLabels(), fmt.Sprintf("%dx40", used)}, {"redis_memory_max_bytes" + r.targetLabels(), fmt.Sprintf("%dx40", used*4)}},
			want:  r.target()}
	}
	out = append(out,
		r.alert("RedisMemoryHigh", "warning", memSrc, mem(0.85), 5*time.Minute,
			fmt.Sprintf("Redis of %s uses more than 85%% of its maxmemory (or of the %s budget while maxmemory is unset)", in.Name, human(budget)),
			"Compare with luagen sizing's estimate: a key family grew beyond its cardinality file (the dashboard's keys per database), or maxmemory is too small; raise maxmemory or shard before writes fail (noeviction) or keys are evicted.",
			memProbe(0.85)),
		r.alert("RedisMemoryCritical", "critical", memSrc, mem(0.95), 2*time.Minute,
			fmt.Sprintf("Redis of %s uses more than 95%% of its maxmemory", in.Name),
			"Writes are about to fail with OOM (noeviction) or keys to be evicted: free memory or raise maxmemory now, then size again.",
			memProbe(0.95)))

	evWhat := "instances." + in.Name + ".server.eviction"
	if srv.EvictionPolicy != "" {
		evWhat += " (" + srv.EvictionPolicy + ": " + srv.EvictionReason + ")"
	}
	evSrc := r.src(srv.Pos, evWhat)
	evProbe := &probe{fire: []series{{"redis_evicted_keys_total" + r.targetLabels(), "0+10x40"}}, quiet: []series{{"redis_evicted_keys_total" + r.targetLabels(), "5x40"}}, want: r.target()}
	if srv.EvictionPolicy == "noeviction" || srv.EvictionPolicy == "" {
		out = append(out, r.alert("RedisEvictionOnNoeviction", "critical", evSrc,
			fmt.Sprintf("increase(redis_evicted_keys_total%s[%s]) > 0", r.s(), r.w()), 0,
			"Redis of "+in.Name+" evicts keys although its spec says noeviction",
			"The running maxmemory-policy is not the spec's (see RedisEvictionPolicyDrift): a held lock or a dedupe key may be gone; set the policy from `luagen config` and check the keys the spec says must not be lost.",
			evProbe))
	} else {
		out = append(out, r.alert("RedisEvicting", "warning", evSrc,
			fmt.Sprintf("increase(redis_evicted_keys_total%s[%s]) > 0", r.s(), r.w()), 5*time.Minute,
			"Redis of "+in.Name+" is at maxmemory and evicting ("+srv.EvictionPolicy+")",
			"Eviction is allowed here ("+srv.EvictionReason+"), but it means memory is full: callers see more misses and rebuilds; size again or raise maxmemory.",
			evProbe))
	}
	policy := srv.EvictionPolicy
	if policy == "" {
		policy = "noeviction"
	}
	out = append(out, r.alert("RedisEvictionPolicyDrift", "warning", evSrc,
		fmt.Sprintf("redis_instance_info%s", r.s(fmt.Sprintf("maxmemory_policy!=%q", policy))), 5*time.Minute,
		"Redis of "+in.Name+" runs another maxmemory-policy than its spec's "+policy,
		"Apply the config `luagen config --instance "+in.Name+"` writes; the policy decides which keys may be lost under memory pressure.",
		&probe{fire: []series{{"redis_instance_info" + r.targetLabels(`maxmemory_policy="allkeys-random"`, `role="master"`), "1x40"}},
			quiet: []series{{"redis_instance_info" + r.targetLabels(fmt.Sprintf("maxmemory_policy=%q", policy), `role="master"`), "1x40"}},
			want:  with(r.target(), "maxmemory_policy", "allkeys-random", "role", "master")}))
	out = append(out, r.alert("RedisOOMReplies", "critical", memSrc,
		r.grew("redis_errors_total"+r.s(`err="OOM"`), 0), 0,
		"Redis of "+in.Name+" refuses writes with OOM",
		"maxmemory is reached and nothing may be evicted: writes fail (the services report them as unavailable); free memory or raise maxmemory.",
		errProbe(r, "OOM")))
	out = append(out, r.alert("RedisBusyScript", "critical", r.src(in.Pos, fmt.Sprintf("scripts of %s (busy-reply-threshold %d ms, luagen config)", in.Name, busyMS)),
		r.grew("redis_errors_total"+r.s(`err="BUSY"`), 0), 0,
		"A script of "+in.Name+" ran past busy-reply-threshold: the server answered BUSY",
		fmt.Sprintf("A declared script does bounded work in well under a millisecond; one that runs %d ms is a bug or a key far larger than its spec: SCRIPT KILL as %s_operator (UNKILLABLE after a write: SHUTDOWN NOSAVE), then find the script in the slowlog.", busyMS, in.Name),
		errProbe(r, "BUSY")))
	// Replication.
	out = append(out, r.alert("RedisReplicaLost", "warning", srvSrc+" (replicas)",
		fmt.Sprintf("redis_connected_slaves%[1]s < max_over_time(redis_connected_slaves%[1]s[%[2]s])", r.s(), r.lw()), time.Minute,
		"Redis of "+in.Name+" has fewer replicas than within the last "+r.lw(),
		"A replica stopped or lost its link: check its process and its master_link_status; until it is back a failover has nowhere to go.",
		&probe{fire: []series{{"redis_connected_slaves" + r.targetLabels(), "1x20 0x20"}}, quiet: []series{{"redis_connected_slaves" + r.targetLabels(), "1x40"}}, want: r.target()}))
	out = append(out, r.alert("RedisReplicationLinkDown", "critical", srvSrc+" (replicas)",
		fmt.Sprintf("redis_master_link_up%s == 0", r.s()), time.Minute,
		"A replica of "+in.Name+" has lost its link to the primary",
		"The replica serves stale data and cannot take over: check the primary's reachability and the replica's masteruser/masterauth.",
		&probe{fire: []series{{"redis_master_link_up" + r.targetLabels(), "0x40"}}, quiet: []series{{"redis_master_link_up" + r.targetLabels(), "1x40"}}, want: r.target()}))
	if in.Topology == keyspec.TopologyCluster {
		out = append(out, r.alert("RedisNoReplica", "critical", r.src(in.Pos, "instances."+in.Name+".topology cluster"),
			fmt.Sprintf(`redis_connected_slaves%s < 1 and on(instance) redis_instance_info%s`, r.s(), r.s(`role="master"`)), 5*time.Minute,
			"A primary of cluster "+in.Name+" has no replica",
			"A cluster primary without a replica loses its slots when it fails: add a replica or let the cluster migrate one.",
			&probe{fire: []series{{"redis_connected_slaves" + r.targetLabels(), "0x40"}, {"redis_instance_info" + r.targetLabels(`role="master"`), "1x40"}},
				quiet: []series{{"redis_connected_slaves" + r.targetLabels(), "1x40"}, {"redis_instance_info" + r.targetLabels(`role="master"`), "1x40"}},
				want:  r.target()}))
	}
	if chans := r.channels(); len(chans) > 0 {
		out = append(out, r.alert("RedisPubSubSubscribersGone", "warning", r.src(chans[0].Pos, "channels "+channelNames(chans)),
			fmt.Sprintf("redis_pubsub_channels%[1]s == 0 and max_over_time(redis_pubsub_channels%[1]s[%[2]s]) > 0", r.s(), r.lw()), 2*time.Minute,
			"No client of "+in.Name+" is subscribed to a channel any more ("+channelNames(chans)+")",
			"The subscribers (realtime gateways, workers) are down or cannot reconnect: they reconcile from their source of truth once back, but nothing is pushed meanwhile.",
			&probe{fire: []series{{"redis_pubsub_channels" + r.targetLabels(), "3x20 0x20"}}, quiet: []series{{"redis_pubsub_channels" + r.targetLabels(), "3x40"}}, want: r.target()}))
	}
	return out
}

// grew is "the counter grew by more than n within the window", counting a
// series that appeared within the window from 0 (increase() sees nothing of
// a counter's first samples: the first NOPERM of a new error code would go
// unseen).
func (r *rules) grew(counter string, n int) string {
	return fmt.Sprintf("increase(%[1]s[%[2]s]) > %[3]d or (%[1]s > %[3]d unless %[1]s offset %[2]s)", counter, r.w(), n)
}

func errProbe(r *rules, code string) *probe {
	return &probe{fire: []series{{"redis_errors_total" + r.targetLabels(fmt.Sprintf("err=%q", code)), "0+5x40"}},
		quiet: []series{{"redis_errors_total" + r.targetLabels(fmt.Sprintf("err=%q", code)), "7x40"}},
		want:  with(r.target(), "err", code)}
}

// channels are the channels whose messages go through this server.
func (r *rules) channels() []*keyspec.Channel {
	var out []*keyspec.Channel
	for _, c := range r.spec.ChannelsOf(r.in) {
		if c.ServerOf() == r.srv {
			out = append(out, c)
		}
	}
	return out
}

func channelNames(cs []*keyspec.Channel) string {
	return strings.Join(names(cs, func(c *keyspec.Channel) string { return c.Name }), ", ")
}

// keys: keys without expiry where the spec makes every key expire.
func (r *rules) keys() []*Rule {
	var out []*Rule
	for _, d := range r.in.DBsOn(r.srv) {
		var durable, unbounded []*keyspec.Key
		for _, k := range r.spec.KeysOf(r.in) {
			if k.DB != d || k.TTL.Rule != keyspec.TTLNone {
				continue
			}
			if len(k.Pattern.Params()) == 0 {
				durable = append(durable, k)
			} else {
				unbounded = append(unbounded, k)
			}
		}
		dbSrc := r.src(d.Pos, "instances."+r.in.Name+".dbs."+d.Name)
		if len(unbounded) > 0 {
			r.notes = append(r.notes, Note{Source: dbSrc, Msg: fmt.Sprintf("no keys-without-expiry rule for db %d: its durable keys %s have placeholders, so their number is not bounded by the spec", d.Index, keyNames(unbounded))})
			continue
		}
		allowed := len(durable)
		what := "every key of the database has a TTL rule"
		if allowed > 0 {
			what = fmt.Sprintf("every key of the database has a TTL rule but %s (ttl: none, one name each)", keyNames(durable))
		}
		db := fmt.Sprintf("db%d", d.Index)
		out = append(out, r.alert("RedisKeysWithoutExpiry", "warning", dbSrc+": "+what,
			fmt.Sprintf(`redis_db_keys%[1]s - redis_db_keys_expiring%[1]s > %[2]d`, r.s(fmt.Sprintf("db=%q", db)), allowed), time.Minute,
			fmt.Sprintf("Database %d of %s holds keys without an expiry that its spec does not declare", d.Index, r.in.Name),
			"Some code wrote a key outside the generated wrappers (or a script forgot its PEXPIRE): find it with SCAN and TTL -1 as the operator, fix the writer, then delete or expire the keys; they never leave by themselves.",
			&probe{fire: []series{{"redis_db_keys" + r.targetLabels(fmt.Sprintf("db=%q", db)), fmt.Sprintf("%dx40", 100+allowed+1)}, {"redis_db_keys_expiring" + r.targetLabels(fmt.Sprintf("db=%q", db)), "100x40"}},
				quiet: []series{{"redis_db_keys" + r.targetLabels(fmt.Sprintf("db=%q", db)), fmt.Sprintf("%dx40", 100+allowed)}, {"redis_db_keys_expiring" + r.targetLabels(fmt.Sprintf("db=%q", db)), "100x40"}},
				want:  with(r.target(), "db", db)}))
	}
	return out
}

func keyNames(ks []*keyspec.Key) string {
	return strings.Join(names(ks, func(k *keyspec.Key) string { return k.Name }), ", ")
}

// access: denied commands and failed logins.
func (r *rules) access() []*Rule {
	users := r.spec.UsersOf(r.in)
	if len(users) == 0 {
		return nil
	}
	var names []string
	for _, u := range users {
		names = append(names, u.Name)
	}
	src := r.src(users[0].Pos, "users "+strings.Join(names, ", ")+" (least privilege: a denied command is a probe or a bug)")
	return []*Rule{
		r.alert("RedisACLDenied", "warning", src,
			r.grew("redis_errors_total"+r.s(`err="NOPERM"`), 0), 0,
			"Redis of "+r.in.Name+" refused commands, keys or channels to a user (NOPERM)",
			"Every user holds exactly what its spec grants: a NOPERM is code calling outside the generated wrappers, a user with the wrong credentials, or someone probing. ACL LOG (as the operator) names the user, command and key.",
			errProbe(r, "NOPERM")),
		r.alert("RedisWrongPassword", "warning", src,
			r.grew("redis_errors_total"+r.s(`err="WRONGPASS"`), 3), 0,
			"Logins to Redis of "+r.in.Name+" fail (WRONGPASS)",
			"A client has a stale password after a rotation, or someone guesses: ACL LOG shows the user and the client's address; rotate the password if it may have leaked.",
			errProbe(r, "WRONGPASS")),
	}
}

// scripts: error rates by declared code, undeclared errors, outcome unknown,
// NOSCRIPT reload storms.
func (r *rules) scripts() []*Rule {
	ss := r.liveScripts()
	if len(ss) == 0 {
		return nil
	}
	var out []*Rule
	svc := func(extra ...string) map[string]string {
		m := map[string]string{}
		return with(m, extra...)
	}
	for _, s := range ss {
		ssrc := r.src(s.Pos, "scripts."+s.Name)
		var codes []string
		for _, e := range s.Errors {
			codes = append(codes, e.Code)
			out = append(out, r.alert("LuagenScriptErrorRate", "warning", r.src(e.Pos, "scripts."+s.Name+".errors "+e.Code),
				fmt.Sprintf(`sum by (script, code) (rate(luagen_script_errors_total{script=%[1]q,code=%[2]q}[%[3]s])) / on(script) group_left sum by (script) (rate(luagen_script_calls_total{script=%[1]q}[%[3]s])) > 0.05`, s.Name, e.Code, r.w()), 5*time.Minute,
				fmt.Sprintf("More than 5%% of %s's calls answer %s", s.Name, e.Code),
				fmt.Sprintf("%s means: %s. A rate this high is callers misusing it or a race the service should not have: the dashboard's row of %s shows when it started.", e.Code, oneLine(e.Doc), s.Name),
				&probe{fire: []series{{fmt.Sprintf(`luagen_script_errors_total{script=%q,code=%q}`, s.Name, e.Code), "0+10x40"}, {fmt.Sprintf(`luagen_script_calls_total{script=%q}`, s.Name), "0+20x40"}},
					quiet: []series{{fmt.Sprintf(`luagen_script_errors_total{script=%q,code=%q}`, s.Name, e.Code), "0+1x40"}, {fmt.Sprintf(`luagen_script_calls_total{script=%q}`, s.Name), "0+100x40"}},
					want:  svc("script", s.Name, "code", e.Code)}))
		}
		known := append(append([]string(nil), codes...), "outcome_unknown", "not_sent")
		declared := "none declared"
		if len(codes) > 0 {
			declared = strings.Join(codes, ", ")
		}
		out = append(out, r.alert("LuagenScriptUndeclaredError", "warning", ssrc+" (errors: "+declared+")",
			r.grew(fmt.Sprintf(`luagen_script_errors_total{script=%q,code!~%q}`, s.Name, regexOf(known)), 0), 0,
			fmt.Sprintf("%s answers errors its spec does not declare", s.Name),
			"An error the spec does not declare is Redis's (NOPERM: the ACL; OOM: memory; BUSY; ERR: a bug in the Lua or an argument the wrapper should have refused) or a transport failure (other): the code label says which.",
			&probe{fire: []series{{fmt.Sprintf(`luagen_script_errors_total{script=%q,code="ERR"}`, s.Name), "0+1x40"}},
				quiet: []series{{fmt.Sprintf(`luagen_script_errors_total{script=%q,code="ERR"}`, s.Name), "3x40"}},
				want:  svc("script", s.Name, "code", "ERR")}))
	}
	var once []string
	for _, s := range ss {
		if !s.Replayable() {
			once = append(once, s.Name)
		}
	}
	if len(once) > 0 {
		out = append(out, r.alert("LuagenScriptOutcomeUnknown", "warning", r.src(ss[0].Pos, "scripts of "+r.in.Name+" that are not replay_safe: "+strings.Join(once, ", ")),
			r.grew(fmt.Sprintf(`luagen_script_errors_total{script=~%q,code="outcome_unknown"}`, regexOf(once)), 0), 0,
			"Calls of an at-most-once script ended without an answer: their outcome is unknown",
			"The wrapper did not resend them (the script is not replay_safe): the caller must reconcile (read the state back) before it retries; many at once means timeouts too short or a network fault.",
			&probe{fire: []series{{fmt.Sprintf(`luagen_script_errors_total{script=%q,code="outcome_unknown"}`, once[0]), "0+1x40"}},
				quiet: []series{{fmt.Sprintf(`luagen_script_errors_total{script=%q,code="outcome_unknown"}`, once[0]), "2x40"}},
				want:  svc("script", once[0], "code", "outcome_unknown")}))
	}
	if !r.in.Functions() {
		names := scriptNames(ss)
		out = append(out, r.alert("LuagenNoscriptReloadStorm", "warning", r.src(r.in.Pos, "instances."+r.in.Name+" (mode evalsha: SCRIPT LOAD on NOSCRIPT)"),
			fmt.Sprintf(`sum by (script) (increase(luagen_script_noscript_reloads_total{script=~%q}[%s])) > 3`, regexOf(names), r.w()), 0,
			"Scripts of "+r.in.Name+" are loaded again and again after NOSCRIPT",
			"The script cache keeps being emptied: a server restarting or failing over in a loop, SCRIPT FLUSH by someone, or a proxy spreading calls over servers; run `luagen load` at deploy and find what empties the cache.",
			&probe{fire: []series{{fmt.Sprintf(`luagen_script_noscript_reloads_total{script=%q}`, names[0]), "0+2x40"}},
				quiet: []series{{fmt.Sprintf(`luagen_script_noscript_reloads_total{script=%q}`, names[0]), "1x40"}},
				want:  svc("script", names[0])}))
	}
	return out
}

// declared: the alerts the spec declares about its services' own metrics
// (alerts:), those about entries this server holds, with their windows filled
// in.
func (r *rules) declared() []*Rule {
	var out []*Rule
	for _, a := range r.spec.AlertsOf(r.in, r.srv) {
		pr := &probe{fire: seriesOf(a.Test.Fire), quiet: seriesOf(a.Test.Quiet), want: with(a.Test.Labels)}
		rl := r.rule(a.Name, a.Severity, r.src(a.AboutPos, a.Source), a.ExprWith(r.w(), r.lw()), a.For, a.Summary, oneLine(a.Runbook), pr)
		pr.at = keyspec.AlertTestEvalOf(r.scaledFor(a.For))
		out = append(out, rl)
	}
	return out
}

func seriesOf(ss []keyspec.AlertSeries) []series {
	out := make([]series, len(ss))
	for i, s := range ss {
		out[i] = series{s.Series, s.Values}
	}
	return out
}

// recording: what the dashboards and the alerts share.
func (r *rules) recording() []*Rule {
	var out []*Rule
	rec := func(name, expr string) {
		out = append(out, &Rule{Record: name, Expr: expr, Labels: map[string]string{"luagen_instance": r.in.Name}})
	}
	if ss := r.liveScripts(); len(ss) > 0 {
		re := regexOf(scriptNames(ss))
		rec("luagen:script_calls:rate"+r.w(), fmt.Sprintf(`sum by (script) (rate(luagen_script_calls_total{script=~%q}[%s]))`, re, r.w()))
		rec("luagen:script_errors:rate"+r.w(), fmt.Sprintf(`sum by (script, code) (rate(luagen_script_errors_total{script=~%q}[%s]))`, re, r.w()))
		rec("luagen:script_duration_seconds:p99_"+r.w(), fmt.Sprintf(`histogram_quantile(0.99, sum by (script, le) (rate(luagen_script_duration_seconds_bucket{script=~%q}[%s])))`, re, r.w()))
	}
	rec("luagen:redis_keys_without_expiry", fmt.Sprintf(`redis_db_keys%[1]s - redis_db_keys_expiring%[1]s`, r.s()))
	return out
}
