package luatest

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Stream commands, after Redis 7.0's t_stream.c. Entries live in nodes cut
// where Redis cuts its listpacks (stream-node-max-entries 100 and
// stream-node-max-bytes 4096, both defaults, sizes computed as listpack.c
// encodes them), so MAXLEN ~ and MINID ~ remove the same whole nodes Redis
// removes. Times (entry IDs for *, delivery and seen times) come from the
// Clock, frozen while a script runs.

const (
	streamNodeMaxEntries = 100
	streamNodeMaxBytes   = 4096
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// streamID is an entry ID, ms-seq.
type streamID struct{ ms, seq uint64 }

var maxStreamID = streamID{math.MaxUint64, math.MaxUint64}

func (id streamID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

func (id streamID) cmp(o streamID) int {
	switch {
	case id.ms > o.ms:
		return 1
	case id.ms < o.ms:
		return -1
	case id.seq > o.seq:
		return 1
	case id.seq < o.seq:
		return -1
	}
	return 0
}

func (id streamID) isZero() bool { return id.ms == 0 && id.seq == 0 }

// incr is streamIncrID; ok false when id was the last possible one.
func (id streamID) incr() (streamID, bool) {
	switch {
	case id.seq == math.MaxUint64 && id.ms == math.MaxUint64:
		return streamID{}, false
	case id.seq == math.MaxUint64:
		return streamID{id.ms + 1, 0}, true
	}
	return streamID{id.ms, id.seq + 1}, true
}

// decr is streamDecrID; ok false when id was 0-0.
func (id streamID) decr() (streamID, bool) {
	switch {
	case id.seq == 0 && id.ms == 0:
		return maxStreamID, false
	case id.seq == 0:
		return streamID{id.ms - 1, math.MaxUint64}, true
	}
	return streamID{id.ms, id.seq - 1}, true
}

var errInvalidStreamID = errReply("ERR Invalid stream ID specified as stream command argument")

// string2ull is Redis's: string2ll for what fits, else strtoull's rules.
func string2ull(s string) (uint64, bool) {
	if v, ok := parseInt(s); ok {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "" || strings.TrimLeft(t, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseStreamID is streamGenericParseIDOrReply. seqGiven is non-nil where
// "ms-*" may leave the sequence to the stream (XADD), and reports whether a
// sequence was given.
func parseStreamID(s string, missingSeq uint64, strict bool, seqGiven *bool) (streamID, reply) {
	if len(s) > 127 {
		return streamID{}, errInvalidStreamID
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i] // a C string
	}
	if strict && (s == "-" || s == "+") {
		return streamID{}, errInvalidStreamID
	}
	if seqGiven != nil {
		*seqGiven = true
	}
	switch s {
	case "-":
		return streamID{}, nil
	case "+":
		return maxStreamID, nil
	}
	msPart, seqPart, dot := strings.Cut(s, "-")
	ms, ok := string2ull(msPart)
	if !ok {
		return streamID{}, errInvalidStreamID
	}
	seq := missingSeq
	if dot {
		if seqGiven != nil && seqPart == "*" {
			seq = 0
			*seqGiven = false
		} else if seq, ok = string2ull(seqPart); !ok {
			return streamID{}, errInvalidStreamID
		}
	}
	return streamID{ms, seq}, nil
}

// intervalStart is the first ID of an interval (XRANGE's start, XPENDING's,
// XAUTOCLAIM's), parsed as streamParseIntervalIDOrReply does: "(id" excludes
// id, so the interval starts at the ID after it.
func intervalStart(s string) streamID {
	return intervalBound(s, 0, streamID.incr, "ERR invalid start ID for the interval")
}

// intervalEnd is the last ID of an interval; "(id" ends it at the ID before id.
func intervalEnd(s string) streamID {
	return intervalBound(s, math.MaxUint64, streamID.decr, "ERR invalid end ID for the interval")
}

// intervalBound parses an interval's end, stepping past an excluded ID with
// step; it ends the command when s does not parse or there is no next ID.
func intervalBound(s string, missingSeq uint64, step func(streamID) (streamID, bool), invalid errReply) streamID {
	if len(s) <= 1 || s[0] != '(' {
		return must(parseStreamID(s, missingSeq, false, nil))
	}
	id, ok := step(must(parseStreamID(s[1:], missingSeq, true, nil)))
	if !ok {
		check(invalid)
	}
	return id
}

// ---- the stream value ----

type streamItem struct {
	id      streamID
	fields  []string // field, value, field, value...
	flags   int
	deleted bool
}

// streamNode is one listpack of Redis's stream: a master entry (the first
// entry's fields) and entries, deleted ones included.
type streamNode struct {
	master       streamID
	masterFields []string
	items        []*streamItem
	live         int
	dead         int
}

type streamNACK struct {
	id            streamID
	consumer      *streamConsumer
	deliveryTime  int64
	deliveryCount int64
}

type streamConsumer struct {
	name     string
	seenTime int64
	pel      map[streamID]*streamNACK
}

type streamGroup struct {
	lastID      streamID
	entriesRead int64 // -1: unknown (SCG_INVALID_ENTRIES_READ)
	pel         map[streamID]*streamNACK
	consumers   map[string]*streamConsumer
}

type streamValue struct {
	nodes        []*streamNode
	length       int64
	lastID       streamID
	firstID      streamID
	maxDeletedID streamID
	entriesAdded int64
	groups       map[string]*streamGroup
}

func newStream() *streamValue { return &streamValue{} }

// ---- listpack sizes (listpack.c) ----

func lpIntSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 1
	case v >= -4096 && v <= 4095:
		return 2
	case v >= -32768 && v <= 32767:
		return 3
	case v >= -8388608 && v <= 8388607:
		return 4
	case v >= -2147483648 && v <= 2147483647:
		return 5
	}
	return 9
}

func lpStringSize(s string) int {
	if v, ok := parseInt(s); ok {
		return lpIntSize(v)
	}
	switch n := len(s); {
	case n < 64:
		return 1 + n
	case n < 4096:
		return 2 + n
	default:
		return 5 + n
	}
}

// lpElement is the bytes one element takes: its encoding and its back length.
func lpElement(enc int) int {
	switch {
	case enc <= 127:
		return enc + 1
	case enc < 16383:
		return enc + 2
	case enc < 2097151:
		return enc + 3
	case enc < 268435455:
		return enc + 4
	}
	return enc + 5
}

// bytes is lpBytes of the node's listpack.
func (n *streamNode) bytes() int {
	total := 6 + 1 // header and end byte
	total += lpElement(lpIntSize(int64(n.live))) + lpElement(lpIntSize(int64(n.dead)))
	total += lpElement(lpIntSize(int64(len(n.masterFields))))
	for _, f := range n.masterFields {
		total += lpElement(lpStringSize(f))
	}
	total += lpElement(1) // the master entry's terminator
	for _, it := range n.items {
		total += lpElement(lpIntSize(int64(it.flags)))
		total += lpElement(lpIntSize(int64(it.id.ms - n.master.ms)))
		total += lpElement(lpIntSize(int64(it.id.seq - n.master.seq)))
		numFields := len(it.fields) / 2
		lpCount := numFields + 3
		if it.flags&streamFlagSameFields == 0 {
			total += lpElement(lpIntSize(int64(numFields)))
			for _, f := range it.fields {
				total += lpElement(lpStringSize(f))
			}
			lpCount += numFields + 1
		} else {
			for i := 1; i < len(it.fields); i += 2 {
				total += lpElement(lpStringSize(it.fields[i]))
			}
		}
		total += lpElement(lpIntSize(int64(lpCount)))
	}
	return total
}

// lastItemID is lpGetEdgeStreamID(lp, 0): the node's last entry, deleted or not.
func (n *streamNode) lastItemID() streamID { return n.items[len(n.items)-1].id }

// append is streamAppendItem with the ID already decided.
func (s *streamValue) append(id streamID, fields []string) {
	total := 0
	for _, f := range fields {
		total += len(f)
	}
	var node *streamNode
	if len(s.nodes) > 0 {
		tail := s.nodes[len(s.nodes)-1]
		if tail.bytes()+total < streamNodeMaxBytes && tail.live+tail.dead < streamNodeMaxEntries {
			node = tail
		}
	}
	flags := 0
	if node == nil {
		node = &streamNode{master: id}
		for i := 0; i < len(fields); i += 2 {
			node.masterFields = append(node.masterFields, fields[i])
		}
		s.nodes = append(s.nodes, node)
		flags = streamFlagSameFields
	} else if len(fields)/2 == len(node.masterFields) {
		same := true
		for i, f := range node.masterFields {
			if fields[2*i] != f {
				same = false
				break
			}
		}
		if same {
			flags = streamFlagSameFields
		}
	}
	node.items = append(node.items, &streamItem{id: id, fields: append([]string(nil), fields...), flags: flags})
	node.live++
	s.length++
	s.entriesAdded++
	s.lastID = id
	if s.length == 1 {
		s.firstID = id
	}
}

// items lists the live entries between start and end (inclusive), in order
// or reversed.
func (s *streamValue) items(start, end streamID, rev bool) []*streamItem {
	var out []*streamItem
	for _, n := range s.nodes {
		for _, it := range n.items {
			if !it.deleted && it.id.cmp(start) >= 0 && it.id.cmp(end) <= 0 {
				out = append(out, it)
			}
		}
	}
	if rev {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

func (s *streamValue) find(id streamID) (*streamNode, *streamItem) {
	for _, n := range s.nodes {
		for _, it := range n.items {
			if it.id == id && !it.deleted {
				return n, it
			}
		}
	}
	return nil, nil
}

// remove is streamIteratorRemoveEntry: the entry is flagged deleted, and a
// node left without live entries goes.
func (s *streamValue) remove(n *streamNode, it *streamItem) {
	it.deleted = true
	it.flags |= streamFlagDeleted
	s.length--
	if n.live == 1 {
		for i, m := range s.nodes {
			if m == n {
				s.nodes = append(s.nodes[:i], s.nodes[i+1:]...)
				break
			}
		}
		return
	}
	n.live--
	n.dead++
}

// lastValidID is streamLastValidID: the last live entry's ID.
func (s *streamValue) lastValidID() streamID {
	all := s.items(streamID{}, maxStreamID, true)
	if len(all) == 0 {
		return streamID{}
	}
	return all[0].id
}

// edgeID is streamGetEdgeID(s, first, skip_tombstones=1).
func (s *streamValue) edgeID(first bool) streamID {
	all := s.items(streamID{}, maxStreamID, !first)
	if len(all) == 0 {
		if first {
			return maxStreamID
		}
		return streamID{}
	}
	return all[0].id
}

const (
	trimNone = iota
	trimMaxLen
	trimMinID
)

type trimArgs struct {
	strategy int
	approx   bool
	limit    int64
	maxlen   int64
	minid    streamID
}

// trim is streamTrim.
func (s *streamValue) trim(a trimArgs) int64 {
	if a.strategy == trimNone {
		return 0
	}
	deleted := int64(0)
	for len(s.nodes) > 0 {
		if a.strategy == trimMaxLen && s.length <= a.maxlen {
			break
		}
		n := s.nodes[0]
		entries := int64(n.live)
		if a.limit != 0 && deleted+entries > a.limit {
			break
		}
		var removeNode bool
		if a.strategy == trimMaxLen {
			removeNode = s.length-entries >= a.maxlen
		} else {
			removeNode = n.lastItemID().cmp(a.minid) < 0
		}
		if removeNode {
			s.nodes = s.nodes[1:]
			s.length -= entries
			deleted += entries
			continue
		}
		if a.approx {
			break
		}
		fromNode := 0
		for _, it := range n.items {
			var stop bool
			if a.strategy == trimMaxLen {
				stop = s.length <= a.maxlen
			} else {
				stop = it.id.cmp(a.minid) >= 0
			}
			if stop {
				break
			}
			if !it.deleted {
				it.deleted = true
				it.flags |= streamFlagDeleted
				fromNode++
				s.length--
			}
		}
		n.live -= fromNode
		n.dead += fromNode
		deleted += int64(fromNode)
		break
	}
	if s.length == 0 {
		s.firstID = streamID{}
	} else if deleted > 0 {
		s.firstID = s.edgeID(true)
	}
	return deleted
}

// rangeHasTombstones is streamRangeHasTombstones from start to the end.
func (s *streamValue) rangeHasTombstones(start streamID) bool {
	if s.length == 0 || s.maxDeletedID.isZero() {
		return false
	}
	if s.firstID.cmp(s.maxDeletedID) > 0 {
		return false
	}
	return start.cmp(s.maxDeletedID) <= 0
}

// estimateDistance is streamEstimateDistanceFromFirstEverEntry; -1 when unknown.
func (s *streamValue) estimateDistance(id streamID) int64 {
	if s.entriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.cmp(s.lastID) < 1 {
		return s.entriesAdded
	}
	cmpLast := id.cmp(s.lastID)
	if cmpLast == 0 {
		return s.entriesAdded
	} else if cmpLast > 0 {
		return -1
	}
	cmpFirst := id.cmp(s.firstID)
	if s.maxDeletedID.isZero() || s.maxDeletedID.cmp(s.firstID) < 0 {
		if cmpFirst < 0 {
			return s.entriesAdded - s.length
		} else if cmpFirst == 0 {
			return s.entriesAdded - s.length + 1
		}
	}
	return -1
}

// lag is streamReplyWithCGLag: nil when unknown.
func (s *streamValue) lag(g *streamGroup) reply {
	switch {
	case s.entriesAdded == 0:
		return intReply(0)
	case g.entriesRead != -1 && !s.rangeHasTombstones(g.lastID):
		return intReply(s.entriesAdded - g.entriesRead)
	}
	if read := s.estimateDistance(g.lastID); read != -1 {
		return intReply(s.entriesAdded - read)
	}
	return nilReply{}
}

// sortedIDs are a pending entries list's IDs in order.
func sortedIDs(m map[streamID]*streamNACK) []streamID {
	return slices.SortedFunc(maps.Keys(m), streamID.cmp)
}

// ---- Keyspace snapshots ----

// Stream is a stream in a Keyspace.
type Stream struct {
	Entries         []StreamEntry // live entries, by ID
	LastID          string        // last-generated-id
	EntriesAdded    int64         // entries-added
	MaxDeletedID    string        // max-deleted-entry-id
	RecordedFirstID string        // recorded-first-entry-id
	Groups          []StreamGroup // by name
}

// StreamEntry is one stream entry: its ID and field, value, field, value...
type StreamEntry struct {
	ID     string
	Fields []string
}

// StreamGroup is one consumer group.
type StreamGroup struct {
	Name            string
	LastDeliveredID string
	EntriesRead     int64 // -1 when Redis does not know it (XINFO GROUPS' nil)
	Pending         []StreamPending
	Consumers       []string // by name
}

// StreamPending is one entry of a group's pending entries list.
type StreamPending struct {
	ID         string
	Consumer   string
	Deliveries int64
}

func (s *streamValue) snapshot() *Stream {
	out := &Stream{
		LastID:          s.lastID.String(),
		EntriesAdded:    s.entriesAdded,
		MaxDeletedID:    s.maxDeletedID.String(),
		RecordedFirstID: s.firstID.String(),
	}
	for _, it := range s.items(streamID{}, maxStreamID, false) {
		out.Entries = append(out.Entries, StreamEntry{ID: it.id.String(), Fields: append([]string(nil), it.fields...)})
	}
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[name]
		sg := StreamGroup{Name: name, LastDeliveredID: g.lastID.String(), EntriesRead: g.entriesRead, Consumers: slices.Sorted(maps.Keys(g.consumers))}
		for _, id := range sortedIDs(g.pel) {
			n := g.pel[id]
			sg.Pending = append(sg.Pending, StreamPending{ID: id.String(), Consumer: n.consumer.name, Deliveries: n.deliveryCount})
		}
		out.Groups = append(out.Groups, sg)
	}
	return out
}

// ---- commands ----

var streamCommands = map[string]handler{
	"xadd":                  cmdXAdd,
	"xrange":                withArg(xrangeGeneric, false),
	"xrevrange":             withArg(xrangeGeneric, true),
	"xlen":                  lengthOf("stream"),
	"xtrim":                 cmdXTrim,
	"xdel":                  cmdXDel,
	"xread":                 cmdXRead,
	"xreadgroup":            cmdXRead,
	"xgroup|create":         cmdXGroup,
	"xgroup|setid":          cmdXGroup,
	"xgroup|destroy":        cmdXGroup,
	"xgroup|createconsumer": cmdXGroup,
	"xgroup|delconsumer":    cmdXGroup,
	"xsetid":                cmdXSetID,
	"xack":                  cmdXAck,
	"xpending":              cmdXPending,
	"xclaim":                cmdXClaim,
	"xautoclaim":            cmdXAutoClaim,
	"xinfo|groups":          cmdXInfo,
	"xinfo|consumers":       cmdXInfo,
}

// parseAddOrTrim is streamParseAddOrTrimArgsOrReply; idPos is XADD's ID position.
func parseAddOrTrim(c *cmdCtx, xadd bool) (a trimArgs, id streamID, idGiven, seqGiven, noMkStream bool, idPos int, errr reply) {
	i := 2
	limitGiven := false
	for ; i < len(c.argv); i++ {
		more := len(c.argv) - 1 - i
		opt := c.argv[i]
		lower := strings.ToLower(opt)
		switch {
		case xadd && opt == "*":
			return finishTrimArgs(a, limitGiven, xadd, id, idGiven, seqGiven, noMkStream, i)
		case (lower == "maxlen" || lower == "minid") && more > 0:
			if a.strategy != trimNone {
				errr = errReply("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return
			}
			a.approx = false
			if next := c.argv[i+1]; more >= 2 && (next == "~" || next == "=") {
				a.approx = next == "~"
				i++
			}
			if lower == "maxlen" {
				if a.maxlen, errr = getLong(c.argv[i+1], ""); errr != nil {
					return
				}
				if a.maxlen < 0 {
					errr = errReply("ERR The MAXLEN argument must be >= 0.")
					return
				}
				a.strategy = trimMaxLen
			} else {
				if a.minid, errr = parseStreamID(c.argv[i+1], 0, true, nil); errr != nil {
					return
				}
				a.strategy = trimMinID
			}
			i++
		case lower == "limit" && more > 0:
			if a.limit, errr = getLong(c.argv[i+1], ""); errr != nil {
				return
			}
			if a.limit < 0 {
				errr = errReply("ERR The LIMIT argument must be >= 0.")
				return
			}
			limitGiven = true
			i++
		case xadd && lower == "nomkstream":
			noMkStream = true
		case xadd:
			if id, errr = parseStreamID(opt, 0, true, &seqGiven); errr != nil {
				return
			}
			idGiven = true
			return finishTrimArgs(a, limitGiven, xadd, id, idGiven, seqGiven, noMkStream, i)
		default:
			errr = errSyntax
			return
		}
	}
	return finishTrimArgs(a, limitGiven, xadd, id, idGiven, seqGiven, noMkStream, i)
}

func finishTrimArgs(a trimArgs, limitGiven, xadd bool, id streamID, idGiven, seqGiven, noMkStream bool, i int) (trimArgs, streamID, bool, bool, bool, int, reply) {
	fail := func(msg string) (trimArgs, streamID, bool, bool, bool, int, reply) {
		return a, id, idGiven, seqGiven, noMkStream, i, errReply(msg)
	}
	if a.limit != 0 && a.strategy == trimNone {
		return fail("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
	}
	if !xadd && a.strategy == trimNone {
		return fail("ERR syntax error, XTRIM must be called with a trimming strategy")
	}
	if limitGiven {
		if !a.approx {
			return fail("ERR syntax error, LIMIT cannot be used without the special ~ option")
		}
	} else if a.approx {
		a.limit = 100 * streamNodeMaxEntries
	} else {
		a.limit = 0
	}
	return a, id, idGiven, seqGiven, noMkStream, i, nil
}

func cmdXAdd(c *cmdCtx) reply {
	a, id, idGiven, seqGiven, noMk, idPos, errr := parseAddOrTrim(c, true)
	if errr != nil {
		return errr
	}
	fieldPos := idPos + 1
	if n := len(c.argv) - fieldPos; n < 2 || n%2 == 1 {
		return arityError(c.argv[0])
	}
	if idGiven && seqGiven && id.isZero() {
		return errReply("ERR The ID specified in XADD must be greater than 0-0")
	}
	key := c.argv[1]
	o := c.lookupTyped(key, "stream")
	if o == nil {
		if noMk {
			return nilReply{}
		}
		o = &object{typ: "stream", stream: newStream()}
		c.s.db.keys[key] = o
		c.wrote(key)
	}
	s := o.stream
	if s.lastID == maxStreamID {
		return errReply("ERR The stream has exhausted the last possible ID, unable to add more items")
	}
	var newID streamID
	switch {
	case idGiven && seqGiven:
		newID = id
	case idGiven:
		if s.lastID.ms == id.ms {
			if s.lastID.seq == math.MaxUint64 {
				return errReply("ERR The ID specified in XADD is equal or smaller than the target stream top item")
			}
			newID = streamID{id.ms, s.lastID.seq + 1}
		} else {
			newID = id
		}
	default:
		if ms := uint64(c.now); ms > s.lastID.ms {
			newID = streamID{ms, 0}
		} else {
			newID, _ = s.lastID.incr()
		}
	}
	if newID.cmp(s.lastID) <= 0 {
		return errReply("ERR The ID specified in XADD is equal or smaller than the target stream top item")
	}
	s.append(newID, c.argv[fieldPos:])
	c.wrote(key)
	s.trim(a)
	return bulkReply(newID.String())
}

func xrangeGeneric(c *cmdCtx, rev bool) reply {
	startArg, endArg := c.argv[2], c.argv[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start := intervalStart(startArg)
	end := intervalEnd(endArg)
	count := int64(-1)
	for j := 4; j < len(c.argv); j++ {
		if strings.EqualFold(c.argv[j], "count") && j+1 < len(c.argv) {
			count = must(getLong(c.argv[j+1], ""))
			if count < 0 {
				count = 0
			}
			j++
			continue
		}
		return errSyntax
	}
	o := c.lookupTyped(c.argv[1], "stream")
	if o == nil {
		return arrayReply{}
	}
	if count == 0 {
		return nilReply{}
	}
	items := o.stream.items(start, end, rev)
	if count > 0 && int64(len(items)) > count {
		items = items[:count]
	}
	out := make(arrayReply, len(items))
	for i, it := range items {
		out[i] = entryReply(it)
	}
	return out
}

func entryReply(it *streamItem) arrayReply {
	return arrayReply{bulkReply(it.id.String()), bulkArray(it.fields, false)}
}

func cmdXTrim(c *cmdCtx) reply {
	a, _, _, _, _, _, errr := parseAddOrTrim(c, false)
	if errr != nil {
		return errr
	}
	key := c.argv[1]
	o := c.lookupTyped(key, "stream")
	if o == nil {
		return intReply(0)
	}
	deleted := o.stream.trim(a)
	if deleted > 0 {
		c.wrote(key)
	}
	return intReply(deleted)
}

// parseStreamIDs reads XDEL's and XACK's IDs (a missing sequence is 0); one
// that does not parse ends the command.
func parseStreamIDs(args []string) []streamID {
	ids := make([]streamID, 0, len(args))
	for _, a := range args {
		ids = append(ids, must(parseStreamID(a, 0, true, nil)))
	}
	return ids
}

func cmdXDel(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "stream")
	if o == nil {
		return intReply(0)
	}
	ids := parseStreamIDs(c.argv[2:])
	s := o.stream
	deleted, firstEntry := 0, false
	for _, id := range ids {
		n, it := s.find(id)
		if it == nil {
			continue
		}
		s.remove(n, it)
		if id == s.firstID {
			firstEntry = true
		}
		if id.cmp(s.maxDeletedID) > 0 {
			s.maxDeletedID = id
		}
		deleted++
	}
	if deleted > 0 {
		if s.length == 0 {
			s.firstID = streamID{}
		} else if firstEntry {
			s.firstID = s.edgeID(true)
		}
		c.wrote(key)
	}
	return intReply(deleted)
}

func (g *streamGroup) consumer(name string) *streamConsumer { return g.consumers[name] }

// lookupGroup is the stream under key and its consumer group grp; when
// either is missing the command ends with NOGROUP, in whose message where
// (" in XREADGROUP with GROUP option" or "") follows the names.
func (c *cmdCtx) lookupGroup(key, grp, where string) (*object, *streamGroup) {
	o := c.lookupTyped(key, "stream")
	var g *streamGroup
	if o != nil {
		g = o.stream.groups[grp]
	}
	if g == nil {
		check(errReply(fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s'%s", key, grp, where)))
	}
	return o, g
}

// claimer is XCLAIM's and XAUTOCLAIM's claiming consumer: created in the
// group on the first claim, its seen time set to now otherwise.
type claimer struct {
	g      *streamGroup
	name   string
	cons   *streamConsumer // nil until the first claim
	now    int64
	justID bool
}

// claim moves the pending entry nack (of ID id and item it) to the claiming consumer,
// delivered at deliveryTime; its delivery count becomes retryCount when that
// is >= 0 and otherwise grows by one, unless JUSTID. The reply is the
// claimed entry, or its ID with JUSTID.
func (cl *claimer) claim(id streamID, nack *streamNACK, it *streamItem, deliveryTime, retryCount int64) reply {
	if cl.cons == nil {
		if cl.cons = cl.g.consumer(cl.name); cl.cons == nil {
			cl.cons = cl.g.createConsumer(cl.name, cl.now)
		} else {
			cl.cons.seenTime = cl.now
		}
	}
	cons := cl.cons
	if nack.consumer != cons && nack.consumer != nil {
		delete(nack.consumer.pel, id)
	}
	nack.deliveryTime = deliveryTime
	if retryCount >= 0 {
		nack.deliveryCount = retryCount
	} else if !cl.justID {
		nack.deliveryCount++
	}
	if nack.consumer != cons {
		cons.pel[id] = nack
		nack.consumer = cons
	}
	if cl.justID {
		return bulkReply(id.String())
	}
	return entryReply(it)
}

func (g *streamGroup) createConsumer(name string, now int64) *streamConsumer {
	if g.consumers[name] != nil {
		return nil
	}
	cons := &streamConsumer{name: name, seenTime: now, pel: map[streamID]*streamNACK{}}
	g.consumers[name] = cons
	return cons
}

func cmdXRead(c *cmdCtx) reply {
	name := c.argv[0]
	group := name == "xreadgroup"
	count := int64(0)
	streamsArg, streamsCount := 0, 0
	var groupName, consumerName string
	hasGroup, noack := false, false
	for i := 1; i < len(c.argv); i++ {
		more := len(c.argv) - i - 1
		switch o := strings.ToLower(c.argv[i]); {
		case o == "block" && more > 0:
			if c.run != nil {
				return errReply(fmt.Sprintf("ERR %s command is not allowed with BLOCK option from scripts", c.name))
			}
			i++
			if v := must(getLong(c.argv[i], "timeout is not an integer or out of range")); v < 0 {
				return errReply("ERR timeout is negative")
			}
		case o == "count" && more > 0:
			i++
			count = must(getLong(c.argv[i], ""))
			if count < 0 {
				count = 0
			}
		case o == "streams" && more > 0:
			streamsArg = i + 1
			streamsCount = len(c.argv) - streamsArg
			if streamsCount%2 != 0 {
				return errReply("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
			}
			streamsCount /= 2
			i = len(c.argv)
		case o == "group" && more >= 2:
			if !group {
				return errReply("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
			}
			groupName, consumerName, hasGroup = c.argv[i+1], c.argv[i+2], true
			i += 2
		case o == "noack":
			if !group {
				return errReply("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
			}
			noack = true
		default:
			return errSyntax
		}
	}
	if streamsArg == 0 {
		return errSyntax
	}
	if group && !hasGroup {
		return errReply("ERR Missing GROUP option for XREADGROUP")
	}
	ids := make([]streamID, streamsCount)
	groups := make([]*streamGroup, streamsCount)
	for k := 0; k < streamsCount; k++ {
		key := c.argv[streamsArg+k]
		arg := c.argv[streamsArg+streamsCount+k]
		o := c.lookupTyped(key, "stream")
		if hasGroup {
			_, groups[k] = c.lookupGroup(key, groupName, " in XREADGROUP with GROUP option")
		}
		switch arg {
		case "$":
			if group {
				return errReply("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
			}
			if o != nil {
				ids[k] = o.stream.lastID
			}
			continue
		case ">":
			if !group {
				return errReply("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
			}
			ids[k] = maxStreamID
			continue
		}
		id := must(parseStreamID(arg, 0, true, nil))
		ids[k] = id
	}
	var out arrayReply
	for k := 0; k < streamsCount; k++ {
		key := c.argv[streamsArg+k]
		o := c.lookup(key)
		if o == nil {
			continue
		}
		s := o.stream
		gt := ids[k]
		serve, history := false, false
		if hasGroup {
			if gt != maxStreamID {
				serve, history = true, true
			} else if s.length > 0 && s.lastValidID().cmp(groups[k].lastID) > 0 {
				serve = true
				gt = groups[k].lastID
			}
		} else if s.length > 0 && s.lastValidID().cmp(gt) > 0 {
			serve = true
		}
		if !serve {
			continue
		}
		start, _ := gt.incr()
		var cons *streamConsumer
		if hasGroup {
			g := groups[k]
			if cons = g.consumer(consumerName); cons == nil {
				cons = g.createConsumer(consumerName, c.now)
			} else {
				cons.seenTime = c.now
			}
			c.wrote(key)
		}
		var entries arrayReply
		if history {
			entries = historyRange(s, cons, start, count, c.now)
		} else {
			entries = groupRange(s, start, count, groups[k], cons, noack, c.now)
		}
		out = append(out, arrayReply{bulkReply(key), entries})
	}
	if out == nil {
		return nilReply{}
	}
	return out
}

// groupRange is streamReplyWithRange from start to the end, delivering to a
// consumer of a group (g nil for XREAD).
func groupRange(s *streamValue, start streamID, count int64, g *streamGroup, cons *streamConsumer, noack bool, now int64) arrayReply {
	out := arrayReply{}
	for _, it := range s.items(start, maxStreamID, false) {
		if g != nil && it.id.cmp(g.lastID) > 0 {
			if g.entriesRead != -1 && !s.rangeHasTombstones(it.id) {
				g.entriesRead++
			} else if s.entriesAdded != 0 {
				g.entriesRead = s.estimateDistance(it.id)
			}
			g.lastID = it.id
		}
		out = append(out, entryReply(it))
		if g != nil && !noack {
			if nack := g.pel[it.id]; nack != nil {
				delete(nack.consumer.pel, it.id)
				nack.consumer = cons
				nack.deliveryTime = now
				nack.deliveryCount = 1
				cons.pel[it.id] = nack
			} else {
				nack := &streamNACK{id: it.id, consumer: cons, deliveryTime: now, deliveryCount: 1}
				g.pel[it.id] = nack
				cons.pel[it.id] = nack
			}
		}
		if count != 0 && int64(len(out)) == count {
			break
		}
	}
	return out
}

// historyRange is streamReplyWithRangeFromConsumerPEL: the consumer's pending
// entries from start; a deleted entry shows as its ID with a nil array.
func historyRange(s *streamValue, cons *streamConsumer, start streamID, count int64, now int64) arrayReply {
	out := arrayReply{}
	for _, id := range sortedIDs(cons.pel) {
		if id.cmp(start) < 0 {
			continue
		}
		if count != 0 && int64(len(out)) >= count {
			break
		}
		if _, it := s.find(id); it != nil {
			out = append(out, entryReply(it))
			nack := cons.pel[id]
			nack.deliveryTime = now
			nack.deliveryCount++
		} else {
			out = append(out, arrayReply{bulkReply(id.String()), nilReply{}})
		}
	}
	return out
}

func subcommandSyntaxError(c *cmdCtx) reply {
	return errReply(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.", truncate(c.argv[1], 128), strings.ToUpper(c.argv[0])))
}

func cmdXGroup(c *cmdCtx) reply {
	opt := strings.ToLower(c.argv[1])
	mkstream := false
	entriesRead := int64(-1)
	var s *streamValue
	var o *object
	key, grp := c.argv[2], c.argv[3]
	i := 5
	for i < len(c.argv) {
		switch {
		case opt == "create" && strings.EqualFold(c.argv[i], "mkstream"):
			mkstream = true
			i++
		case (opt == "create" || opt == "setid") && strings.EqualFold(c.argv[i], "entriesread") && i+1 < len(c.argv):
			entriesRead = must(getLong(c.argv[i+1], ""))
			if entriesRead < 0 && entriesRead != -1 {
				return errReply("ERR value for ENTRIESREAD must be positive or -1")
			}
			i += 2
		default:
			return subcommandSyntaxError(c)
		}
	}
	o = c.lookupTyped(key, "stream")
	if o != nil {
		s = o.stream
	}
	var g *streamGroup
	if !mkstream {
		if s == nil {
			return errReply("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
		}
		if g = s.groups[grp]; g == nil && (opt == "setid" || opt == "createconsumer" || opt == "delconsumer") {
			return errReply(fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", grp, key))
		}
	}
	switch {
	case opt == "create" && len(c.argv) >= 5 && len(c.argv) <= 8:
		var id streamID
		if c.argv[4] == "$" {
			if s != nil {
				id = s.lastID
			}
		} else {
			id = must(parseStreamID(c.argv[4], 0, true, nil))
		}
		if s == nil {
			o = &object{typ: "stream", stream: newStream()}
			c.s.db.keys[key] = o
			s = o.stream
			c.wrote(key)
		}
		if s.groups == nil {
			s.groups = map[string]*streamGroup{}
		}
		if s.groups[grp] != nil {
			return errReply("BUSYGROUP Consumer Group name already exists")
		}
		s.groups[grp] = &streamGroup{lastID: id, entriesRead: entriesRead, pel: map[streamID]*streamNACK{}, consumers: map[string]*streamConsumer{}}
		c.wrote(key)
		return okReply
	case opt == "setid" && (len(c.argv) == 5 || len(c.argv) == 7):
		var id streamID
		if c.argv[4] == "$" {
			id = s.lastID
		} else {
			id = must(parseStreamID(c.argv[4], 0, false, nil))
		}
		g.lastID = id
		g.entriesRead = entriesRead
		c.wrote(key)
		return okReply
	case opt == "destroy" && len(c.argv) == 4:
		if g == nil {
			return intReply(0)
		}
		delete(s.groups, grp)
		c.wrote(key)
		return intReply(1)
	case opt == "createconsumer" && len(c.argv) == 5:
		if g.createConsumer(c.argv[4], c.now) == nil {
			return intReply(0)
		}
		c.wrote(key)
		return intReply(1)
	case opt == "delconsumer" && len(c.argv) == 5:
		cons := g.consumers[c.argv[4]]
		if cons == nil {
			return intReply(0)
		}
		pending := len(cons.pel)
		for id := range cons.pel {
			delete(g.pel, id)
		}
		delete(g.consumers, c.argv[4])
		c.wrote(key)
		return intReply(pending)
	}
	return subcommandSyntaxError(c)
}

func cmdXSetID(c *cmdCtx) reply {
	id := must(parseStreamID(c.argv[2], 0, true, nil))
	entriesAdded := int64(-1)
	var maxXdel streamID
	for i := 3; i < len(c.argv); i++ {
		more := len(c.argv) - 1 - i
		switch opt := strings.ToLower(c.argv[i]); {
		case opt == "entriesadded" && more > 0:
			entriesAdded = must(getLong(c.argv[i+1], ""))
			if entriesAdded < 0 {
				return errReply("ERR entries_added must be positive")
			}
			i++
		case opt == "maxdeletedid" && more > 0:
			maxXdel = must(parseStreamID(c.argv[i+1], 0, true, nil))
			if id.cmp(maxXdel) < 0 {
				return errReply("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
			}
			i++
		default:
			return errSyntax
		}
	}
	key := c.argv[1]
	o := c.lookupTyped(key, "stream")
	if o == nil {
		return errNoSuchKey
	}
	s := o.stream
	if s.length > 0 {
		if id.cmp(s.lastValidID()) < 0 {
			return errReply("ERR The ID specified in XSETID is smaller than the target stream top item")
		}
		if entriesAdded != -1 && s.length > entriesAdded {
			return errReply("ERR The entries_added specified in XSETID is smaller than the target stream length")
		}
	}
	s.lastID = id
	if entriesAdded != -1 {
		s.entriesAdded = entriesAdded
	}
	if !maxXdel.isZero() {
		s.maxDeletedID = maxXdel
	}
	c.wrote(key)
	return okReply
}

func cmdXAck(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "stream")
	var g *streamGroup
	if o != nil {
		g = o.stream.groups[c.argv[2]]
	}
	if g == nil {
		return intReply(0)
	}
	ids := parseStreamIDs(c.argv[3:])
	acked := 0
	for _, id := range ids {
		if nack := g.pel[id]; nack != nil {
			delete(g.pel, id)
			delete(nack.consumer.pel, id)
			acked++
		}
	}
	if acked > 0 {
		c.wrote(key)
	}
	return intReply(acked)
}

func cmdXPending(c *cmdCtx) reply {
	argc := len(c.argv)
	justInfo := argc == 3
	key, grp := c.argv[1], c.argv[2]
	var start, end streamID
	count, minIdle := int64(0), int64(0)
	consumerName := ""
	if argc != 3 && (argc < 6 || argc > 9) {
		return errSyntax
	}
	if argc >= 6 {
		startIdx := 3
		if strings.EqualFold(c.argv[3], "idle") {
			minIdle = must(getLong(c.argv[4], ""))
			if argc < 8 {
				return errSyntax
			}
			startIdx += 2
		}
		count = must(getLong(c.argv[startIdx+2], ""))
		if count < 0 {
			count = 0
		}
		start = intervalStart(c.argv[startIdx])
		end = intervalEnd(c.argv[startIdx+1])
		if startIdx+3 < argc {
			consumerName = c.argv[startIdx+3]
		}
	}
	_, g := c.lookupGroup(key, grp, "")
	if justInfo {
		if len(g.pel) == 0 {
			return arrayReply{intReply(0), nilReply{}, nilReply{}, nilReply{}}
		}
		ids := sortedIDs(g.pel)
		consumers := arrayReply{}
		for _, name := range slices.Sorted(maps.Keys(g.consumers)) {
			if n := len(g.consumers[name].pel); n > 0 {
				consumers = append(consumers, arrayReply{bulkReply(name), bulkReply(strconv.Itoa(n))})
			}
		}
		return arrayReply{intReply(len(ids)), bulkReply(ids[0].String()), bulkReply(ids[len(ids)-1].String()), consumers}
	}
	pel := g.pel
	if consumerName != "" {
		cons := g.consumers[consumerName]
		if cons == nil {
			return arrayReply{}
		}
		pel = cons.pel
	}
	out := arrayReply{}
	for _, id := range sortedIDs(pel) {
		if count == 0 {
			break
		}
		if id.cmp(start) < 0 {
			continue
		}
		if id.cmp(end) > 0 {
			break
		}
		nack := pel[id]
		if minIdle != 0 && c.now-nack.deliveryTime < minIdle {
			continue
		}
		count--
		out = append(out, arrayReply{bulkReply(id.String()), bulkReply(nack.consumer.name), intReply(max(c.now-nack.deliveryTime, 0)), intReply(nack.deliveryCount)})
	}
	return out
}

func cmdXClaim(c *cmdCtx) reply {
	key, grp := c.argv[1], c.argv[2]
	o, g := c.lookupGroup(key, grp, "")
	minIdle := must(getLong(c.argv[4], "Invalid min-idle-time argument for XCLAIM"))
	minIdle = max(minIdle, 0)
	var ids []streamID
	j := 5
	for ; j < len(c.argv); j++ {
		id, errr := parseStreamID(c.argv[j], 0, true, nil)
		if errr != nil {
			break
		}
		ids = append(ids, id)
	}
	now := c.now
	retryCount, deliveryTime := int64(-1), int64(-1)
	force, justID := false, false
	var lastID streamID
	for ; j < len(c.argv); j++ {
		more := len(c.argv) - 1 - j
		switch opt := strings.ToLower(c.argv[j]); {
		case opt == "force":
			force = true
		case opt == "justid":
			justID = true
		case opt == "idle" && more > 0:
			j++
			deliveryTime = must(getLong(c.argv[j], "Invalid IDLE option argument for XCLAIM"))
			deliveryTime = now - deliveryTime
		case opt == "time" && more > 0:
			j++
			deliveryTime = must(getLong(c.argv[j], "Invalid TIME option argument for XCLAIM"))
		case opt == "retrycount" && more > 0:
			j++
			retryCount = must(getLong(c.argv[j], "Invalid RETRYCOUNT option argument for XCLAIM"))
		case opt == "lastid" && more > 0:
			j++
			lastID = must(parseStreamID(c.argv[j], 0, true, nil))
		default:
			return errReply(fmt.Sprintf("ERR Unrecognized XCLAIM option '%s'", c.argv[j]))
		}
	}
	changed := false
	if lastID.cmp(g.lastID) > 0 {
		g.lastID = lastID
		changed = true
	}
	if deliveryTime == -1 || deliveryTime < 0 || deliveryTime > now {
		deliveryTime = now
	}
	s := o.stream
	cl := &claimer{g: g, name: c.argv[3], now: now, justID: justID}
	out := arrayReply{}
	for _, id := range ids {
		nack := g.pel[id]
		_, it := s.find(id)
		if it == nil {
			if nack != nil {
				delete(g.pel, id)
				delete(nack.consumer.pel, id)
				changed = true
			}
			continue
		}
		if force && nack == nil {
			nack = &streamNACK{id: id}
			g.pel[id] = nack
			changed = true
		}
		if nack == nil {
			continue
		}
		if nack.consumer != nil && minIdle != 0 && now-nack.deliveryTime < minIdle {
			continue
		}
		out = append(out, cl.claim(id, nack, it, deliveryTime, retryCount))
		changed = true
	}
	if changed || cl.cons != nil {
		c.wrote(key)
	}
	return out
}

func cmdXAutoClaim(c *cmdCtx) reply {
	key, grp := c.argv[1], c.argv[2]
	minIdle := must(getLong(c.argv[4], "Invalid min-idle-time argument for XAUTOCLAIM"))
	minIdle = max(minIdle, 0)
	start := intervalStart(c.argv[5])
	count := int64(100)
	justID := false
	for j := 6; j < len(c.argv); j++ {
		more := len(c.argv) - 1 - j
		switch opt := strings.ToLower(c.argv[j]); {
		case opt == "count" && more > 0:
			count = must(getRangeLong(c.argv[j+1], 1, math.MaxInt64/16, "COUNT must be > 0"))
			j++
		case opt == "justid":
			justID = true
		default:
			return errSyntax
		}
	}
	o, g := c.lookupGroup(key, grp, "")
	s := o.stream
	now := c.now
	attempts := count * 10
	cl := &claimer{g: g, name: c.argv[3], now: now, justID: justID}
	claimed, deleted := arrayReply{}, arrayReply{}
	ids := sortedIDs(g.pel)
	k := 0
	for ; k < len(ids) && ids[k].cmp(start) < 0; k++ {
	}
	for ; attempts > 0 && count > 0 && k < len(ids); k++ {
		attempts--
		id := ids[k]
		nack := g.pel[id]
		_, it := s.find(id)
		if it == nil {
			delete(g.pel, id)
			delete(nack.consumer.pel, id)
			deleted = append(deleted, bulkReply(id.String()))
			count--
			continue
		}
		if minIdle != 0 && now-nack.deliveryTime < minIdle {
			continue
		}
		claimed = append(claimed, cl.claim(id, nack, it, now, -1))
		count--
	}
	next := streamID{}
	if k < len(ids) {
		next = ids[k]
	}
	if len(claimed) > 0 || len(deleted) > 0 || cl.cons != nil {
		c.wrote(key)
	}
	return arrayReply{bulkReply(next.String()), claimed, deleted}
}

func cmdXInfo(c *cmdCtx) reply {
	key := c.argv[2]
	o := c.lookupTyped(key, "stream")
	if o == nil {
		return errNoSuchKey
	}
	s := o.stream
	switch strings.ToLower(c.argv[1]) {
	case "consumers":
		if len(c.argv) != 4 {
			return subcommandSyntaxError(c)
		}
		g := s.groups[c.argv[3]]
		if g == nil {
			return errReply(fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", c.argv[3], key))
		}
		out := arrayReply{}
		for _, name := range slices.Sorted(maps.Keys(g.consumers)) {
			cons := g.consumers[name]
			out = append(out, arrayReply{bulkReply("name"), bulkReply(name), bulkReply("pending"), intReply(len(cons.pel)), bulkReply("idle"), intReply(max(c.now-cons.seenTime, 0))})
		}
		return out
	default: // groups
		if len(c.argv) != 3 {
			return subcommandSyntaxError(c)
		}
		out := arrayReply{}
		for _, name := range slices.Sorted(maps.Keys(s.groups)) {
			g := s.groups[name]
			var read reply = nilReply{}
			if g.entriesRead != -1 {
				read = intReply(g.entriesRead)
			}
			out = append(out, arrayReply{bulkReply("name"), bulkReply(name), bulkReply("consumers"), intReply(len(g.consumers)),
				bulkReply("pending"), intReply(len(g.pel)), bulkReply("last-delivered-id"), bulkReply(g.lastID.String()),
				bulkReply("entries-read"), read, bulkReply("lag"), s.lag(g)})
		}
		return out
	}
}
