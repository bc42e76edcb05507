package inputlimit

import (
	"bytes"
	"errors"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// A YAML alias (*a) stands for the whole node its anchor (&a) names. The
// libraries that turn YAML into JSON or Go values copy that node once per
// alias: a 1 MB string aliased 3000 times is 3 GB of JSON. go-yaml's own
// check (allowedAliasRatio) counts nodes, not bytes, so one large scalar
// passes it. Aliases may expand a document to ExpansionRatio times its
// size, or to ExpansionFloor when that is more; kubectl never writes
// aliases, and a hand-written file that shares a few labels is far below
// either.
var (
	ExpansionRatio int64 = 4
	ExpansionFloor int64 = 1 << 20
)

// ExpansionError is a document whose aliases expand it beyond its limit.
type ExpansionError struct {
	Size  int   // the document's size in bytes
	Limit int64 // what it may expand to
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("YAML aliases expand the document (%d bytes) to more than %s, the limit (%d times its size, at least %s)",
		e.Size, Size(e.Limit), ExpansionRatio, Size(ExpansionFloor))
}

// errAliasCycle is an alias inside the node its anchor names: it stands
// for a node without end.
var errAliasCycle = errors.New("a YAML alias refers to a node that holds it")

// expansionLimit is what a document of size bytes may expand to.
func expansionLimit(size int) int64 {
	return max(ExpansionRatio*int64(size), ExpansionFloor)
}

// CheckAliases refuses the YAML document doc (one document, not a stream)
// when its aliases expand it beyond its limit (*ExpansionError). A
// document without both an anchor and an alias, which is all that kubectl
// writes, costs one scan for '&' and '*'; any other is parsed into a node
// tree, which holds each alias once, and measured on that. A document
// that does not parse is refused with the parser's error: there is no
// measuring it, and the decoder that follows would refuse it as well.
func CheckAliases(doc []byte) error {
	if !MayAlias(doc) {
		return nil
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc, &root); err != nil {
		return err
	}
	err := CheckNode(&root, len(doc))
	if errors.Is(err, errAliasCycle) {
		// go-yaml refuses such an alias itself, on meeting it, before
		// anything is expanded: let it say so in its own words.
		return nil
	}
	return err
}

// MayAlias reports whether doc may hold both an anchor and an alias: what
// CheckAliases measures. It errs towards yes.
func MayAlias(doc []byte) bool {
	return atNodeStart(doc, '&') && atNodeStart(doc, '*')
}

// CheckNode is CheckAliases on a parsed document of size bytes.
func CheckNode(root *yamlv3.Node, size int) error {
	m := measure{limit: expansionLimit(size), seen: map[*yamlv3.Node]int64{}}
	if m.size(root) > m.limit {
		if m.cycle {
			return errAliasCycle
		}
		return &ExpansionError{Size: size, Limit: m.limit}
	}
	return nil
}

// measure sizes a node tree with every alias expanded, about as JSON
// spells it: a scalar's text and its quotes, a collection's brackets and
// separators. A size past limit is limit+1: no sum can overflow.
type measure struct {
	limit int64
	// seen is the expanded size of each node an alias names, measured
	// once however many aliases name it; inProgress while it is measured.
	seen  map[*yamlv3.Node]int64
	cycle bool
}

const inProgress = -1

func (m *measure) size(n *yamlv3.Node) int64 {
	switch n.Kind {
	case yamlv3.ScalarNode:
		return int64(len(n.Value)) + 2
	case yamlv3.AliasNode:
		if n.Alias == nil {
			return 0
		}
		switch s, ok := m.seen[n.Alias]; {
		case ok && s == inProgress:
			m.cycle = true
			return m.limit + 1
		case ok:
			return s
		}
		m.seen[n.Alias] = inProgress
		s := m.size(n.Alias)
		m.seen[n.Alias] = s
		return s
	}
	total := int64(2)
	for _, c := range n.Content {
		if total += m.size(c) + 1; total > m.limit {
			return m.limit + 1
		}
	}
	return total
}

// atNodeStart reports whether doc may hold c where a node starts: at the
// start, or after white space, a flow indicator, a "-", ":" or "?", or a
// byte of a multi-byte character (YAML 1.1 reads NEL, LS and PS as line
// breaks). It errs towards yes: c inside a plain scalar ("a *b") counts.
func atNodeStart(doc []byte, c byte) bool {
	for i := 0; ; i++ {
		j := bytes.IndexByte(doc[i:], c)
		if j < 0 {
			return false
		}
		i += j
		if i == 0 || bytes.IndexByte([]byte(" \t\r\n[{,:-?"), doc[i-1]) >= 0 || doc[i-1] >= 0x80 {
			return true
		}
	}
}
