package cluster

import (
	discoveryv1 "k8s.io/api/discovery/v1"
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
//
// An object whose first member is addressType, as kubectl writes an
// EndpointSlice, is tried as one (sortedEndpointSlice) where guess is
// set: not for the items of a typed List, which carry no kind.
func examineTyped(loc location, raw []byte, guess bool) (it item, ok bool, refused string) {
	var obj any
	h, ok := leadingType(raw)
	switch {
	case ok:
		if class, _ := classify(h); class != itemObject {
			return item{}, false, ""
		}
		if obj, ok = unmarshalV2(h.kind, raw); !ok {
			return item{}, false, h.kind
		}
	case guess && firstKey(raw) == "addressType":
		if obj, h, ok = sortedEndpointSlice(raw); !ok {
			return item{}, false, h.kind
		}
	default:
		return item{}, false, ""
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

// sortedEndpointSlice decodes raw as an EndpointSlice, for an object whose
// first member is addressType: kubectl, like encoding/json, writes an
// object's members sorted by name, and an EndpointSlice's addressType
// sorts before its apiVersion, and its kind after its endpoints, most of
// the object. The object is one only if v2 decodes it as one (every
// member is an EndpointSlice's, none twice) and its own apiVersion and
// kind then say so; for anything else ok is false, and the long way
// reads it. refused (h.kind) is EndpointSlice where v2 could not decode
// raw as one.
func sortedEndpointSlice(raw []byte) (obj any, h header, ok bool) {
	obj, ok = unmarshalV2(endpointSliceType.Kind, raw)
	if !ok {
		return nil, header{kind: endpointSliceType.Kind}, false
	}
	tm := obj.(*discoveryv1.EndpointSlice).TypeMeta
	h = header{apiVersion: tm.APIVersion, kind: tm.Kind}
	if tm != endpointSliceType {
		return nil, header{}, false
	}
	return obj, h, true
}

// firstKey is the name of the first member of the object raw, or "" where
// raw does not start as an object with a plain string key.
func firstKey(raw []byte) string {
	i := jsonSkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return ""
	}
	key, _, ok := jsonKey(raw, jsonSkipSpace(raw, i+1))
	if !ok {
		return ""
	}
	return key
}
