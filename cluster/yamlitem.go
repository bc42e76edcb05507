package cluster

import (
	"errors"
	"unsafe"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/inputlimit"
)

// slowItem converts one item of a long List that the block path could
// not take (a comment, a folded scalar, a flow mapping...) on its own, as
// the document's slower tiers would: text runs from the item's "- " line
// to the next item's, which YAML reads as a sequence of that one item. So
// such an item costs itself, not the document: sending the whole
// document to a single-threaded general parser made a kubectl snapshot's
// YAML ten times as costly as its JSON.
//
// Any trouble is errSlowPath, for the document, where the slower tiers
// read the whole document again and word the error with its line
// numbers: a broken item, and one that continues past its text (a quoted
// scalar that does, is broken alone). So is an item that may hold both
// an anchor and an alias. The document's aliases are measured against
// its size before anything expands them (inputlimit.CheckAliases);
// measuring each item against its own size would let the items of a
// long List expand, in sum, far beyond what the document may. kubectl
// writes no aliases.
func slowItem(text string) (out []byte, err error) {
	doc := unsafe.Slice(unsafe.StringData(text), len(text)) // read, never written
	if inputlimit.MayAlias(doc) {
		return nil, errSlowPath
	}
	defer func() {
		if r := recover(); r != nil {
			if isFault(r) {
				panic(r) // for guardFault: a mapped file shrank
			}
			out, err = nil, errSlowPath
		}
	}()
	if out, err = treeYAMLToJSON(doc); errors.Is(err, errSlowPath) {
		out, err = yaml.YAMLToJSONStrict(doc)
	}
	if err != nil {
		return nil, errSlowPath
	}
	items, ok := jsonArrayItems(out)
	if !ok || len(items) != 1 {
		return nil, errSlowPath
	}
	return items[0], nil
}
