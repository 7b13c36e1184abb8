package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Errors of functions mode (mode: functions in the spec).
var (
	// ErrNoFunction: FCALL answered that the function does not exist: the
	// instance's library is not loaded, or is another version (a function's
	// name carries its script's SHA1). Run the deploy step (luagen load,
	// LoadLibrary); a wrapper never loads code itself.
	ErrNoFunction = errors.New("function not loaded: the library is missing or of another version")
	// ErrLibraryVersion: the library a server holds answers another version
	// than the one LoadLibrary loaded or VerifyLibrary expects.
	ErrLibraryVersion = errors.New("library version mismatch")
	// ErrFunctionsMode: SCRIPT LOAD of a script of a functions-mode instance
	// (Preload, PreloadNodes): its code reaches Redis only as a library.
	ErrFunctionsMode = errors.New("script of a functions-mode instance: load its library (LoadLibrary), not the script")
)

// isNoFunction reports whether an error reply is FCALL's "Function not found".
func isNoFunction(msg string) bool { return strings.Contains(msg, "Function not found") }

// NewFunction is NewScript for an instance in functions mode: the script runs
// as function (FCALL, FCALL_RO when readOnly) of its instance's library, whose
// name must end in the first 8 hex characters of the source's SHA1.
func NewFunction(name, src, sha1Hex, function string, readOnly bool, opts ...ScriptOption) (*Script, error) {
	s, err := NewScript(name, src, sha1Hex, readOnly, opts...)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(function, "_"+sha1Hex[:8]) {
		return nil, fmt.Errorf("script %s: function %s does not carry the source's SHA1 %s: %w (run luagen generate)", name, function, sha1Hex[:8], ErrSHAMismatch)
	}
	s.function = function
	s.cmdName, s.shaArg = "fcall", function
	if readOnly {
		s.cmdName = "fcall_ro"
	}
	return s, nil
}

// MustFunction is NewFunction for package initialisation of generated code.
func MustFunction(name, src, sha1Hex, function string, readOnly bool, opts ...ScriptOption) *Script {
	s, err := NewFunction(name, src, sha1Hex, function, readOnly, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// Function is the name of the function the script runs as, or "" for a script
// run by EVALSHA.
func (s *Script) Function() string { return s.function }

// fcall sends FCALL (FCALL_RO for a read-only script) of s's function.
// Every go-redis client and pipeline is one; a Scripter that is not gets an
// error.
func (s *Script) fcall(ctx context.Context, c redis.Scripter, keys []string, args []any) *redis.Cmd {
	f, ok := c.(functionCaller)
	if !ok {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(fmt.Errorf("runtime: script %s: a %T cannot FCALL", s.name, c))
		return cmd
	}
	if s.readOnly {
		return f.FCallRO(ctx, s.function, keys, args...)
	}
	return f.FCall(ctx, s.function, keys, args...)
}

// functionCaller is the part of a go-redis client or pipeline FCALL needs.
type functionCaller interface {
	FCall(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd
	FCallRO(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd
}

// Library is an instance's Redis Functions library as luagen generated it
// (the Library variable of a functions-mode package).
type Library struct {
	Name            string // the library's name (the instance's)
	Version         string // what VersionFunction answers, and the library's header names
	VersionFunction string // the function that answers the version (to callers that may run code; LoadLibrary and VerifyLibrary never call it)
	Source          string // the FUNCTION LOAD payload
}

// NodeLibrary is what LoadLibrary or VerifyLibrary found on one primary.
type NodeLibrary struct {
	Addr    string
	Version string // what the server's library answered; "" when none
	Err     error
}

// LibraryReport is LoadLibrary's or VerifyLibrary's account, node by node.
type LibraryReport struct {
	Nodes []NodeLibrary // sorted by address
}

// Err joins the errors of the nodes that failed, each naming its node.
func (r LibraryReport) Err() error {
	var errs []error
	for _, n := range r.Nodes {
		if n.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Addr, n.Err))
		}
	}
	return errors.Join(errs...)
}

// LoadLibrary is the deploy step of a functions-mode instance: on every primary
// c reaches (a single server; every primary of a cluster; every shard of a
// Ring) it runs FUNCTION LOAD REPLACE of lib, then reads the library back with
// FUNCTION LIST ... WITHCODE and checks that it is lib (version lib.Version),
// running none of its code. c is a client of the instance's loader user
// (FUNCTION LOAD and FUNCTION LIST, no FCALL; acl.LoaderUser). Replicas get the
// library by replication, and it persists in RDB and AOF. A node that fails does
// not stop the others; the error is the report's Err.
func LoadLibrary(ctx context.Context, c redis.UniversalClient, lib Library) (LibraryReport, error) {
	return eachPrimary(ctx, c, func(ctx context.Context, node *redis.Client) NodeLibrary {
		n := NodeLibrary{Addr: node.Options().Addr}
		if err := node.FunctionLoadReplace(ctx, lib.Source).Err(); err != nil {
			n.Err = fmt.Errorf("FUNCTION LOAD REPLACE of library %s: %w", lib.Name, err)
			return n
		}
		n.Version, n.Err = version(ctx, node, lib)
		return n
	})
}

// VerifyLibrary checks, on every primary c reaches, that the library is lib
// (FUNCTION LIST ... WITHCODE; no code runs): a service may call it at start to
// fail fast (ErrNoFunction when the library is missing, ErrLibraryVersion when
// it is another version). The application user of a functions-mode instance
// holds FUNCTION LIST for it, and so does the loader.
func VerifyLibrary(ctx context.Context, c redis.UniversalClient, lib Library) (LibraryReport, error) {
	return eachPrimary(ctx, c, func(ctx context.Context, node *redis.Client) NodeLibrary {
		n := NodeLibrary{Addr: node.Options().Addr}
		n.Version, n.Err = version(ctx, node, lib)
		return n
	})
}

// version reads the library named lib.Name on node with FUNCTION LIST
// LIBRARYNAME ... WITHCODE, without running any of its code, and compares it
// with lib.Source: the version is lib.Version when the code is lib's, else the
// version its generated header names ("" when it names none).
func version(ctx context.Context, node *redis.Client, lib Library) (string, error) {
	libs, err := node.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lib.Name, WithCode: true}).Result()
	if err != nil {
		return "", fmt.Errorf("library %s: FUNCTION LIST: %w", lib.Name, err)
	}
	for _, l := range libs {
		if l.Name != lib.Name { // LIBRARYNAME is a pattern
			continue
		}
		if l.Code == lib.Source {
			return lib.Version, nil
		}
		v := headerVersion(l.Code)
		return v, fmt.Errorf("library %s answers version %.12s, want %.12s: %w", lib.Name, v, lib.Version, ErrLibraryVersion)
	}
	return "", fmt.Errorf("library %s: %w", lib.Name, ErrNoFunction)
}

// headerVersion is the version a generated library's header comment names
// ("-- Library app, version <hex>: ..."), or "".
func headerVersion(code string) string {
	for _, line := range strings.SplitN(code, "\n", 4) {
		if _, rest, ok := strings.Cut(line, ", version "); ok && strings.HasPrefix(line, "-- Library ") {
			v, _, _ := strings.Cut(rest, ":")
			return v
		}
	}
	return ""
}

func eachPrimary(ctx context.Context, c redis.UniversalClient, f func(context.Context, *redis.Client) NodeLibrary) (LibraryReport, error) {
	var (
		mu sync.Mutex
		r  LibraryReport
	)
	each := func(ctx context.Context, node *redis.Client) error {
		n := f(ctx, node)
		mu.Lock()
		r.Nodes = append(r.Nodes, n)
		mu.Unlock()
		return nil
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, each)
	case *redis.Ring:
		err = c.ForEachShard(ctx, each)
	case *redis.Client:
		err = each(ctx, c)
	default:
		return r, fmt.Errorf("runtime: library of a %T: want a *redis.Client, *redis.Ring or *redis.ClusterClient", c)
	}
	if err != nil {
		return r, fmt.Errorf("runtime: library: the primaries of the client: %w", err)
	}
	sort.Slice(r.Nodes, func(i, j int) bool { return r.Nodes[i].Addr < r.Nodes[j].Addr })
	return r, r.Err()
}
