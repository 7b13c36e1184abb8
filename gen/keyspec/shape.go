package keyspec

import (
	"strconv"
	"strings"
)

// A pattern's shape is an automaton over bytes that accepts every name of the
// pattern: exactly, but for an int placeholder, which it takes as any
// canonical decimal of up to its bounds' digits. Two patterns that are not
// simple (a placeholder inside a segment, a value holding ':', a literal hash
// tag) are compared by intersecting their shapes: when no byte string reaches
// both ends, no name matches both; when one does, it is checked against both
// patterns exactly.

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(c byte)     { s[c>>6] |= 1 << (c & 63) }
func (s byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }
func (s byteSet) and(o byteSet) byteSet {
	return byteSet{s[0] & o[0], s[1] & o[1], s[2] & o[2], s[3] & o[3]}
}
func (s byteSet) empty() bool { return s[0]|s[1]|s[2]|s[3] == 0 }

// first is the smallest byte of a set that is not empty.
func (s byteSet) first() byte {
	for c := 0; c < 256; c++ {
		if s.has(byte(c)) {
			return byte(c)
		}
	}
	return 0
}

func bytesOf(chars string) byteSet {
	var s byteSet
	for i := 0; i < len(chars); i++ {
		s.add(chars[i])
	}
	return s
}

const (
	digits    = "0123456789"
	lowerHex  = digits + "abcdef"
	nameBytes = digits + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-"
)

// alphabet is every byte a value of the placeholder may hold.
func (p *Param) alphabet() byteSet {
	switch p.Type {
	case TypeUUID:
		return bytesOf(lowerHex + "-")
	case TypeInt:
		return bytesOf(digits + "-")
	case TypeHex, TypeSHA256, TypeHMAC:
		return bytesOf(lowerHex)
	case TypeName:
		return bytesOf(nameBytes)
	case TypePath:
		return bytesOf(nameBytes + ":")
	case TypeEnum:
		var all strings.Builder
		if p.Enum != nil {
			for _, v := range p.Enum.Values {
				all.WriteString(p.EncodedValue(v))
			}
		}
		return bytesOf(all.String())
	}
	return byteSet{}
}

// nfa is an automaton with epsilon moves (an edge of empty set); state 0
// starts it, accept ends it.
type nfa struct {
	edges  [][]edge
	accept int
}

type edge struct {
	set byteSet // empty: an epsilon move
	to  int
}

func (n *nfa) state() int {
	n.edges = append(n.edges, nil)
	return len(n.edges) - 1
}

func (n *nfa) link(from int, set byteSet, to int) {
	n.edges[from] = append(n.edges[from], edge{set, to})
}

// chain adds states reading each set in turn from from, and returns the last.
func (n *nfa) chain(from int, sets ...byteSet) int {
	for _, s := range sets {
		next := n.state()
		n.link(from, s, next)
		from = next
	}
	return from
}

func literalSets(s string) []byteSet {
	out := make([]byteSet, len(s))
	for i := 0; i < len(s); i++ {
		out[i].add(s[i])
	}
	return out
}

func repeatSet(s byteSet, n int) []byteSet {
	out := make([]byteSet, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// shapeOf is the automaton of the pattern's names.
func shapeOf(p Pattern) *nfa {
	n := &nfa{}
	cur := n.state()
	for _, pt := range p.Parts {
		if pt.Param == nil {
			cur = n.chain(cur, literalSets(pt.Literal)...)
			continue
		}
		cur = n.param(cur, pt.Param)
	}
	n.accept = cur
	return n
}

// param adds the placeholder's values from state from and returns the state
// after them.
func (n *nfa) param(from int, p *Param) int {
	end := n.state()
	var eps byteSet
	hex := bytesOf(lowerHex)
	switch p.Type {
	case TypeUUID:
		dash := bytesOf("-")
		var sets []byteSet
		for i, group := range []int{8, 4, 4, 4, 12} {
			if i > 0 {
				sets = append(sets, dash)
			}
			sets = append(sets, repeatSet(hex, group)...)
		}
		n.link(n.chain(from, sets...), eps, end)
	case TypeHex:
		n.link(n.chain(from, repeatSet(hex, p.Len)...), eps, end)
	case TypeSHA256, TypeHMAC:
		n.link(n.chain(from, repeatSet(hex, 64)...), eps, end)
	case TypeEnum:
		if p.Enum != nil {
			for _, v := range p.Enum.Values {
				n.link(n.chain(from, literalSets(p.EncodedValue(v))...), eps, end)
			}
		}
	case TypeInt:
		// A canonical decimal: "0", or a first digit 1-9 and as many digits
		// as the bounds allow, after a '-' for the negative ones.
		if p.Min <= 0 && p.Max >= 0 {
			n.link(n.chain(from, bytesOf("0")), eps, end)
		}
		if p.Max > 0 {
			n.digits(from, end, max(p.Min, 1), p.Max)
		}
		if p.Min < 0 {
			n.digits(n.chain(from, bytesOf("-")), end, max(-p.Max, 1), -p.Min)
		}
	case TypeName:
		set := bytesOf(nameBytes)
		cur := from
		for i := 0; i < p.MaxLen; i++ {
			cur = n.chain(cur, set)
			n.link(cur, eps, end)
		}
	case TypePath:
		// seg[k], colon[k]: k bytes read, the last a name byte or a ':'.
		set, colon := bytesOf(nameBytes), bytesOf(":")
		seg, col := make([]int, p.MaxLen+1), make([]int, p.MaxLen+1)
		for k := 1; k <= p.MaxLen; k++ {
			seg[k], col[k] = n.state(), n.state()
			n.link(seg[k], eps, end)
		}
		n.link(from, set, seg[1])
		for k := 1; k < p.MaxLen; k++ {
			n.link(seg[k], set, seg[k+1])
			n.link(seg[k], colon, col[k+1])
			n.link(col[k], set, seg[k+1])
		}
	}
	return end
}

// digits adds the canonical decimals of lo..hi (lo >= 1) from state from:
// a first digit 1-9, then as many digits as lo's to hi's width allows.
func (n *nfa) digits(from, end int, lo, hi int64) {
	minW, maxW := len(strconv.FormatInt(lo, 10)), len(strconv.FormatInt(hi, 10))
	cur := n.chain(from, bytesOf("123456789"))
	for w := 1; w <= maxW; w++ {
		if w >= minW {
			n.link(cur, byteSet{}, end)
		}
		if w < maxW {
			cur = n.chain(cur, bytesOf(digits))
		}
	}
}

// maxShapePairs bounds the search of two shapes: far above any real pair of
// patterns (two 256-byte names meet in 65536 pairs). Past it the patterns are
// reported as possibly overlapping.
const maxShapePairs = 1 << 21

// shapeWitness intersects the shapes of a and b: "" (certain) when no name can
// match both; else a name both shapes accept, certain when it matches both
// patterns exactly.
func shapeWitness(a, b Pattern) (string, bool) {
	na, nb := shapeOf(a), shapeOf(b)
	type pair struct{ s, t int }
	type step struct {
		from pair
		c    byte
		eps  bool
	}
	seen := map[pair]step{}
	start := pair{0, 0}
	seen[start] = step{from: start, eps: true}
	queue := []pair{start}
	goal := pair{na.accept, nb.accept}
	for len(queue) > 0 {
		if len(seen) > maxShapePairs {
			return a.Example(), false
		}
		cur := queue[0]
		queue = queue[1:]
		if cur == goal {
			var out []byte
			for p := cur; p != start; p = seen[p].from {
				if st := seen[p]; !st.eps {
					out = append(out, st.c)
				}
			}
			for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
				out[i], out[j] = out[j], out[i]
			}
			w := string(out)
			if a.Match(w) && b.Match(w) {
				return w, true
			}
			if v := sampleWitness(a, b); v != "" {
				return v, true
			}
			return w, false
		}
		visit := func(next pair, c byte, eps bool) {
			if _, ok := seen[next]; !ok {
				seen[next] = step{from: cur, c: c, eps: eps}
				queue = append(queue, next)
			}
		}
		for _, ea := range na.edges[cur.s] {
			if ea.set.empty() {
				visit(pair{ea.to, cur.t}, 0, true)
			}
		}
		for _, eb := range nb.edges[cur.t] {
			if eb.set.empty() {
				visit(pair{cur.s, eb.to}, 0, true)
			}
		}
		for _, ea := range na.edges[cur.s] {
			if ea.set.empty() {
				continue
			}
			for _, eb := range nb.edges[cur.t] {
				if both := ea.set.and(eb.set); !eb.set.empty() && !both.empty() {
					visit(pair{ea.to, eb.to}, both.first(), false)
				}
			}
		}
	}
	return "", true
}

// maxSampleNames bounds the names sampleWitness builds from one pattern.
const maxSampleNames = 4096

// sampleWitness is a name of a built from its placeholders' samples that b
// matches, or the reverse; "" when none of them is.
func sampleWitness(a, b Pattern) string {
	for _, pair := range [2][2]Pattern{{a, b}, {b, a}} {
		names := []string{""}
		for _, pt := range pair[0].Parts {
			vals := []string{pt.Literal}
			if pt.Param != nil {
				vals = pt.Param.samples()
			}
			var next []string
			for _, n := range names {
				for _, v := range vals {
					if len(next) < maxSampleNames {
						next = append(next, n+v)
					}
				}
			}
			names = next
		}
		for _, n := range names {
			if pair[0].Match(n) && pair[1].Match(n) {
				return n
			}
		}
	}
	return ""
}
