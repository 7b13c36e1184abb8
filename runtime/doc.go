// Package runtime is what luagen's generated code calls: script execution with
// EVALSHA and NOSCRIPT recovery (also inside pipelines), preloading, checks of
// key parts and script arguments, reply decoding, the declared-key
// descriptions (KeyInfo) and the typed errors of all of these. It works on any
// go-redis v9 client: *redis.Client, *redis.ClusterClient, *redis.Ring or a
// redis.UniversalClient. A program that uses only generated code links go-redis
// (with its own dependencies) and the standard library, and no msgpack; helpers
// for the services built on generated code live elsewhere.
//
// # Import name
//
// Import it as runtime, as generated code does. A file that also needs Go's own
// runtime package imports this one as luagenrt:
//
//	import (
//		"runtime"
//
//		luagenrt "github.com/hanchat/luagen/runtime"
//	)
//
// # What generated code calls
//
// Every name below is written by luagen's generator; the rest of the package
// is for the callers of generated code and for backends.
//
//   - Scripts: MustScript and MustFunction (functions mode) with the options
//     ReplaySafe and StringArgs; Script.Input and Script.PrefixedInput.
//   - Calls: Input's Key, PrefixedKey, ChannelKey, KeyCount (a repeating KEYS
//     position), Same and SamePart (with a KeyPart) for shared placeholders,
//     then one method per argument (Int, Bool, Duration, Millis, String, Bytes,
//     Token, Hex, UUID, Name, Channel, Const, Unused, OptInt ... OptName for
//     optional ones, ArgCount for a repeating one); Run on a DB, made by Bind;
//     Queue on a Batch, giving a Pending; an Observer in a generated Clients.
//   - Replies: Script.ArrayReply and Script.ValueReply, then Reply's Int, Bool,
//     String, Bytes, Duration, Time, Enum, Strings and Err, with Nullable and
//     List.
//   - Keys: CheckUUID, CheckHex, CheckName, CheckPath, CheckInt, CheckHMAC
//     (taking an HMAC) and EnumPartError in key builders; NoPrefix, CheckPrefix,
//     PrefixFromURL, ResolvePrefix, TestPrefix and ErrInvalidPrefix for
//     deployment prefixes; KeyInfo for the declared keys.
//   - Errors and libraries: ErrorCode for each declared error reply; Library
//     for a functions-mode instance.
//
// # What callers use
//
// Preload and PreloadNodes (with PreloadReport) load scripts; WithLoader lets a
// client recover NOSCRIPT through a loader user; AutoPipeline wraps go-redis's
// auto-pipeliner; CheckDB checks a client's database; LoadLibrary and
// VerifyLibrary deploy and check a functions-mode library; Batch.Exec sends a
// batch and Pending.Result reads a call's result. Errors are typed and match
// sentinels with errors.Is: ScriptError (ErrScriptReply, and each ErrorCode),
// ArgError (ErrInvalidArg), KeyPartError (ErrInvalidKeyPart), ReplyError
// (ErrReplyShape), OutcomeUnknownError (ErrOutcomeUnknown), PrefixError
// (ErrInvalidPrefix), ErrNoClient, ErrWrongDB, ErrUncheckedDB, ErrSHAMismatch,
// ErrNotExecuted, ErrUndeclaredScript and the functions-mode errors.
// Script.Run calls a script with keys and arguments of the caller's own.
//
// # What backends use
//
// A Backend (runtime/rueidisbackend is one) runs a built Input: it reads the
// call with Input.Script, Input.NumKeys and Input.Strings, the script with
// Script.Name, SHA1, Source, ReadOnly, Replayable and Function, recovers
// NOSCRIPT with Script.LoadOnce, resends refused calls with NotRun, RetryWait
// and RefusedRetries, reports a call never sent with NotSent, may hand array
// replies over as Values (IntValue, StringValue, BoolValue, NilValue,
// ArrayValue, OtherValue), and is bound with BindBackend.
package runtime
