package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// examineTyped is examine in one pass, for the common case: an object of a
// kind kube-proxy reads, whose apiVersion and kind are its first two
// members (as kubectl and the API server write them), and which
// encoding/json/v2 decodes. It reports false for anything else, which
// examine then reads the long way, with its messages; refused names the
// kind v2 could not decode the object as, so that the long way does not
// try v2 again.
//
// The long way scans every member of the object for its header before
// decoding it: at 10k Services that scan cost about as much CPU as the
// decoding. It is not needed here. Where v2 decodes the object, the object
// is valid JSON with no duplicate and no unknown member, so the leading
// apiVersion and kind are the ones the scan would have found (the last of
// each name), and the object's metadata holds the namespace and name the
// header would have read; the object is the one decodeObject would have
// made. FuzzDecode holds both ways to the same snapshot and warnings.
func examineTyped(loc location, raw []byte) (it item, ok bool, refused string) {
	h, ok := leadingType(raw)
	if !ok {
		return item{}, false, ""
	}
	if class, _ := classify(h); class != itemObject {
		return item{}, false, ""
	}
	obj, ok := unmarshalV2(h.kind, raw)
	if !ok {
		return item{}, false, h.kind
	}
	meta := obj.(metav1.Object) // every kind newObject makes is one
	h.namespace, h.name = meta.GetNamespace(), meta.GetName()
	loc.object = h.describe()
	it = item{loc: loc, h: h, class: itemObject}
	it.obj, it.warnings, it.err = finishObject(loc, h, obj, nil)
	return it, true, ""
}

// leadingType reads apiVersion and kind when they are the first two
// members of the object raw, in either order. It reads no further value:
// a List's second member is its items, most of the file.
func leadingType(raw []byte) (h header, ok bool) {
	i := jsonSkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return h, false
	}
	i = jsonSkipSpace(raw, i+1)
	for n := range 2 {
		key, at, ok := jsonKey(raw, i)
		if !ok {
			return h, false
		}
		end := jsonValueEnd(raw, at)
		val, ok := jsonString(raw[at:end])
		switch {
		case !ok:
			return h, false
		case key == "apiVersion" && h.apiVersion == "":
			h.apiVersion = val
		case key == "kind" && h.kind == "":
			h.kind = val
		default:
			return h, false
		}
		if n == 0 {
			var closed bool
			if i, closed, ok = jsonAfter(raw, end, '}'); !ok || closed {
				return h, false
			}
		}
	}
	return h, h.apiVersion != "" && h.kind != ""
}
