// Package tablegen reads the command table of a running redis-server (COMMAND
// INFO and COMMAND DOCS) and renders it as the Go source of package rediscmd.
package tablegen

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"slices"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/gen/rediscmd"
	"github.com/redis/go-redis/v9"
)

// Read asks the server for every command and subcommand: COMMAND INFO for
// arity, flags, ACL categories, tips and key specs; COMMAND DOCS for group,
// summary, doc flags and arguments; INFO server for the version.
func Read(ctx context.Context, rdb *redis.Client) (version string, cmds []rediscmd.Command, err error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", nil, fmt.Errorf("INFO server: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			version = v
		}
	}
	if version == "" {
		return "", nil, fmt.Errorf("INFO server has no redis_version")
	}
	rawInfo, err := rdb.Do(ctx, "COMMAND", "INFO").Result()
	if err != nil {
		return "", nil, fmt.Errorf("COMMAND INFO: %w", err)
	}
	rawDocs, err := rdb.Do(ctx, "COMMAND", "DOCS").Result()
	if err != nil {
		return "", nil, fmt.Errorf("COMMAND DOCS: %w", err)
	}
	docs, err := asMap(rawDocs)
	if err != nil {
		return "", nil, fmt.Errorf("COMMAND DOCS: %w", err)
	}
	list, ok := rawInfo.([]any)
	if !ok {
		return "", nil, fmt.Errorf("COMMAND INFO: want an array, got %T", rawInfo)
	}
	for _, e := range list {
		c, err := command(e, docs)
		if err != nil {
			return "", nil, fmt.Errorf("COMMAND INFO: %w", err)
		}
		cmds = append(cmds, c)
	}
	slices.SortFunc(cmds, func(a, b rediscmd.Command) int { return strings.Compare(a.Name, b.Name) })
	for i := range cmds {
		if err := probeReadOnly(ctx, rdb, &cmds[i]); err != nil {
			return "", nil, err
		}
	}
	return version, cmds, nil
}

// readOnlyRefusal is what Redis answers a no-writes script calling a command
// flagged write or may_replicate (script.c, scriptVerifyWriteCommandAllow).
const readOnlyRefusal = "Write commands are not allowed from read-only scripts"

// probeReadOnly finds may_replicate, which COMMAND INFO of Redis 7.0 does not
// list, by calling the command from a no-writes script with placeholder
// arguments of a valid count: Redis checks unknown command, arity, noscript,
// ACL and then writes before it runs the command, so a command it would refuse
// is never run. Commands flagged write or noscript need no probe. This runs
// only against the scratch server the table is generated from.
func probeReadOnly(ctx context.Context, rdb *redis.Client, c *rediscmd.Command) error {
	for i := range c.Subcommands {
		if err := probeReadOnly(ctx, rdb, &c.Subcommands[i]); err != nil {
			return err
		}
	}
	if c.IsContainer() || c.Has(rediscmd.FlagWrite) || c.Has(rediscmd.FlagNoScript) {
		return nil
	}
	args := []any{"EVAL", "#!lua flags=no-writes\nreturn redis.pcall(unpack(ARGV))", 0}
	words := c.Words()
	for _, w := range words {
		args = append(args, w)
	}
	n := c.Arity
	if n < 0 {
		n = -n
	}
	for i := len(words); i < n; i++ {
		args = append(args, "luagen-probe")
	}
	err := rdb.Do(ctx, args...).Err()
	c.MayReplicate = err != nil && strings.Contains(err.Error(), readOnlyRefusal)
	return nil
}

// command reads one COMMAND INFO entry: name, arity, flags, first key, last key,
// step, ACL categories, tips, key specs, subcommands.
func command(e any, docs map[string]any) (rediscmd.Command, error) {
	a, ok := e.([]any)
	if !ok || len(a) < 10 {
		return rediscmd.Command{}, fmt.Errorf("entry %v: want 10 fields", e)
	}
	name, _ := a[0].(string)
	name = strings.ToLower(name)
	arity, _ := a[1].(int64)
	c := rediscmd.Command{Name: name, Arity: int(arity)}
	for _, f := range strings1(a[2]) {
		c.Flags = append(c.Flags, rediscmd.Flag(f))
	}
	for _, cat := range strings1(a[6]) {
		c.Categories = append(c.Categories, strings.TrimPrefix(cat, "@"))
	}
	c.Tips = strings1(a[7])
	specs, _ := a[8].([]any)
	for _, s := range specs {
		ks, err := keySpec(s)
		if err != nil {
			return c, fmt.Errorf("%s: %w", name, err)
		}
		c.KeySpecs = append(c.KeySpecs, ks)
	}
	if d, ok := docs[name]; ok {
		dm, err := asMap(d)
		if err != nil {
			return c, fmt.Errorf("%s docs: %w", name, err)
		}
		c.Group, _ = dm["group"].(string)
		c.Since, _ = dm["since"].(string)
		c.Summary, _ = dm["summary"].(string)
		c.DocFlags = strings1(dm["doc_flags"])
		c.ReplacedBy, _ = dm["replaced_by"].(string)
		if args, ok := dm["arguments"]; ok {
			if c.Arguments, err = arguments(args); err != nil {
				return c, fmt.Errorf("%s arguments: %w", name, err)
			}
		}
		if subs, ok := dm["subcommands"]; ok {
			if docs, err = asMap(subs); err != nil {
				return c, fmt.Errorf("%s subcommand docs: %w", name, err)
			}
		}
	}
	subs, _ := a[9].([]any)
	for _, s := range subs {
		sc, err := command(s, docs)
		if err != nil {
			return c, err
		}
		c.Subcommands = append(c.Subcommands, sc)
	}
	slices.SortFunc(c.Subcommands, func(a, b rediscmd.Command) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

// searchStep is a key spec's begin_search or find_keys map (name) and the
// spec map inside it.
func searchStep(m map[string]any, name string) (step, spec map[string]any, err error) {
	if step, err = asMap(m[name]); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if spec, err = asMap(step["spec"]); err != nil {
		return nil, nil, fmt.Errorf("%s spec: %w", name, err)
	}
	return step, spec, nil
}

func keySpec(s any) (rediscmd.KeySpec, error) {
	m, err := asMap(s)
	if err != nil {
		return rediscmd.KeySpec{}, err
	}
	var ks rediscmd.KeySpec
	ks.Notes, _ = m["notes"].(string)
	for _, f := range strings1(m["flags"]) {
		ks.Flags = append(ks.Flags, rediscmd.KeyFlag(f))
	}
	bs, bspec, err := searchStep(m, "begin_search")
	if err != nil {
		return ks, err
	}
	ks.BeginSearch.Type, _ = bs["type"].(string)
	ks.BeginSearch.Index = int(num(bspec["index"]))
	ks.BeginSearch.Keyword, _ = bspec["keyword"].(string)
	ks.BeginSearch.StartFrom = int(num(bspec["startfrom"]))
	fk, fspec, err := searchStep(m, "find_keys")
	if err != nil {
		return ks, err
	}
	ks.FindKeys.Type, _ = fk["type"].(string)
	ks.FindKeys.LastKey = int(num(fspec["lastkey"]))
	ks.FindKeys.KeyStep = int(num(fspec["keystep"]))
	ks.FindKeys.Limit = int(num(fspec["limit"]))
	ks.FindKeys.KeyNumIdx = int(num(fspec["keynumidx"]))
	ks.FindKeys.FirstKey = int(num(fspec["firstkey"]))
	for _, t := range []string{ks.BeginSearch.Type, ks.FindKeys.Type} {
		switch t {
		case "index", "keyword", "range", "keynum", "unknown":
		default:
			return ks, fmt.Errorf("key spec type %q: the table knows index, keyword, range, keynum and unknown", t)
		}
	}
	return ks, nil
}

func arguments(v any) ([]rediscmd.Argument, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array, got %T", v)
	}
	var out []rediscmd.Argument
	for _, e := range list {
		m, err := asMap(e)
		if err != nil {
			return nil, err
		}
		a := rediscmd.Argument{Flags: strings1(m["flags"]), KeySpec: int(num(m["key_spec_index"]))}
		a.Name, _ = m["name"].(string)
		a.Type, _ = m["type"].(string)
		a.Token, _ = m["token"].(string)
		if sub, ok := m["arguments"]; ok {
			if a.Arguments, err = arguments(sub); err != nil {
				return nil, fmt.Errorf("%s: %w", a.Name, err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// asMap reads a RESP3 map or a RESP2 array of alternating names and values.
func asMap(v any) (map[string]any, error) {
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			s, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %v is not a string", k)
			}
			out[s] = x
		}
		return out, nil
	case []any:
		if len(v)%2 != 0 {
			return nil, fmt.Errorf("an array of %d elements is not a map", len(v))
		}
		out := make(map[string]any, len(v)/2)
		for i := 0; i < len(v); i += 2 {
			s, ok := v[i].(string)
			if !ok {
				return nil, fmt.Errorf("map key %v is not a string", v[i])
			}
			out[s] = v[i+1]
		}
		return out, nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("want a map, got %T", v)
}

func strings1(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func num(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

// Render is the Go source of package rediscmd's table.go.
func Render(version string, cmds []rediscmd.Command) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by luagen. DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// From redis-server %s: COMMAND INFO and COMMAND DOCS. Refresh with `make commands`.\n\n", version)
	b.WriteString("package rediscmd\n\n")
	b.WriteString("// ServerVersion is the redis-server the table was read from.\n")
	fmt.Fprintf(&b, "const ServerVersion = %q\n\n", version)
	b.WriteString("var table = []Command{\n")
	for _, c := range cmds {
		writeCommand(&b, c)
		b.WriteString(",\n")
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format the table: %w", err)
	}
	return out, nil
}

func writeCommand(b *bytes.Buffer, c rediscmd.Command) {
	b.WriteString("{\n")
	fmt.Fprintf(b, "Name: %q, Arity: %d,\n", c.Name, c.Arity)
	if len(c.Flags) > 0 {
		fmt.Fprintf(b, "Flags: []Flag{%s},\n", quoted(c.Flags))
	}
	if len(c.Categories) > 0 {
		fmt.Fprintf(b, "Categories: []string{%s},\n", quoted(c.Categories))
	}
	if len(c.Tips) > 0 {
		fmt.Fprintf(b, "Tips: []string{%s},\n", quoted(c.Tips))
	}
	for _, f := range []struct{ name, v string }{{"Group", c.Group}, {"Since", c.Since}, {"Summary", c.Summary}, {"ReplacedBy", c.ReplacedBy}} {
		if f.v != "" {
			fmt.Fprintf(b, "%s: %q,\n", f.name, f.v)
		}
	}
	if len(c.DocFlags) > 0 {
		fmt.Fprintf(b, "DocFlags: []string{%s},\n", quoted(c.DocFlags))
	}
	if len(c.KeySpecs) > 0 {
		b.WriteString("KeySpecs: []KeySpec{\n")
		for _, s := range c.KeySpecs {
			b.WriteString("{")
			if s.Notes != "" {
				fmt.Fprintf(b, "Notes: %q, ", s.Notes)
			}
			fmt.Fprintf(b, "Flags: []KeyFlag{%s},\n", quoted(s.Flags))
			bs := s.BeginSearch
			switch bs.Type {
			case "index":
				fmt.Fprintf(b, "BeginSearch: BeginSearch{Type: %q, Index: %d},\n", bs.Type, bs.Index)
			case "keyword":
				fmt.Fprintf(b, "BeginSearch: BeginSearch{Type: %q, Keyword: %q, StartFrom: %d},\n", bs.Type, bs.Keyword, bs.StartFrom)
			default:
				fmt.Fprintf(b, "BeginSearch: BeginSearch{Type: %q},\n", bs.Type)
			}
			fk := s.FindKeys
			switch fk.Type {
			case "range":
				fmt.Fprintf(b, "FindKeys: FindKeys{Type: %q, LastKey: %d, KeyStep: %d, Limit: %d},\n", fk.Type, fk.LastKey, fk.KeyStep, fk.Limit)
			case "keynum":
				fmt.Fprintf(b, "FindKeys: FindKeys{Type: %q, KeyNumIdx: %d, FirstKey: %d, KeyStep: %d},\n", fk.Type, fk.KeyNumIdx, fk.FirstKey, fk.KeyStep)
			default:
				fmt.Fprintf(b, "FindKeys: FindKeys{Type: %q},\n", fk.Type)
			}
			b.WriteString("},\n")
		}
		b.WriteString("},\n")
	}
	if len(c.Arguments) > 0 {
		b.WriteString("Arguments: ")
		writeArguments(b, c.Arguments)
		b.WriteString(",\n")
	}
	if c.MayReplicate {
		b.WriteString("MayReplicate: true,\n")
	}
	if len(c.Subcommands) > 0 {
		b.WriteString("Subcommands: []Command{\n")
		for _, s := range c.Subcommands {
			writeCommand(b, s)
			b.WriteString(",\n")
		}
		b.WriteString("},\n")
	}
	b.WriteString("}")
}

func writeArguments(b *bytes.Buffer, args []rediscmd.Argument) {
	b.WriteString("[]Argument{\n")
	for _, a := range args {
		fmt.Fprintf(b, "{Name: %q, Type: %q", a.Name, a.Type)
		if a.Token != "" {
			fmt.Fprintf(b, ", Token: %q", a.Token)
		}
		if a.Type == "key" {
			fmt.Fprintf(b, ", KeySpec: %d", a.KeySpec)
		}
		if len(a.Flags) > 0 {
			fmt.Fprintf(b, ", Flags: []string{%s}", quoted(a.Flags))
		}
		if len(a.Arguments) > 0 {
			b.WriteString(", Arguments: ")
			writeArguments(b, a.Arguments)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}")
}

func quoted[S ~string](list []S) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(string(s))
	}
	return strings.Join(q, ", ")
}
