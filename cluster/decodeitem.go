package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A snapshot is read in two steps. examine reads one JSON value as far as
// it can without the decoder's state: its header and, for a Node,
// Service, EndpointSlice or ServiceCIDR, the decoded and defaulted object.
// accept then keeps it, in file order. A List's items are examined on
// every CPU (examineAll) and accepted one by one, so a file decodes to the
// same snapshot, warnings and first error as when read item by item.

// itemClass is what an examined value turned out to be.
type itemClass int

const (
	itemObject  itemClass = iota // a kind kube-proxy reads: obj is set
	itemList                     // a List: items is set
	itemWarning                  // a known kind at another apiVersion: skipped with warnings
	itemOther                    // a kind kube-proxy does not read: skipped
)

// item is one examined value.
type item struct {
	loc      location
	h        header
	class    itemClass
	items    []byte   // a List's "items"
	list     [][]byte // the items of items, when the scan cut them (listCut)
	listCut  bool
	obj      any // *corev1.Node, *corev1.Service, ...
	warnings []string
	err      error
}

// examine reads one JSON value: a List or a single object. itemKind is
// the "apiVersion Kind" that items of a typed List (ServiceList) default
// to. A lazy reading says that the value may not be valid JSON: examine
// then checks every byte that it does not decode (see lazy in decode.go).
// An object of a kind kube-proxy reads is examined in one pass where it
// can be (examineTyped). It is safe to call from several goroutines.
func examine(loc location, raw []byte, itemKind string, r reading) item {
	var refused string // the kind v2 could not decode raw as, if any
	if !r.longWay {
		it, ok, kind := examineTyped(loc, raw, itemKind == "")
		if ok {
			return it
		}
		refused = kind
	}
	fields, ok := jsonObjectFields(raw)
	if !ok {
		return item{err: loc.errorf("not a Kubernetes object: expected a mapping with apiVersion and kind")}
	}
	return examineFields(loc, raw, fields, itemKind, r, refused)
}

// examineFields is examine the long way, on raw's members as
// jsonObjectFields reads them; refused is the kind v2 could not decode raw
// as, if it tried.
func examineFields(loc location, raw []byte, fields jsonFields, itemKind string, r reading, refused string) item {
	lazy := r.lazy
	if itemKind != "" && fields.get("kind") == nil {
		// Items of a typed List as the API server returns it carry no type.
		if lazy && !json.Valid(raw) {
			return item{err: loc.errorf("not valid JSON")}
		}
		if raw = withType(fields, itemKind); raw == nil {
			return item{err: loc.errorf("cannot re-encode item")}
		}
		fields, _ = jsonObjectFields(raw)
	}
	h := readHeader(fields)
	loc.object = h.describe()
	it := item{loc: loc, h: h}
	switch items := fields.get("items"); {
	case h.kind == "":
		it.err = loc.errorf("object has no kind")
	case h.kind == "List" || strings.HasSuffix(h.kind, "List") && items != nil:
		it.class, it.items = itemList, items
		it.list, it.listCut = fields.cutItems(listItemsKey)
		it.warnings, it.err = listDuplicates(loc, fields)
		if it.err == nil && lazy && !validWithout(raw, fields, "items") {
			it.err = loc.errorf("not valid JSON")
		}
	default:
		it.class, it.warnings = classify(h)
		switch {
		case it.class == itemObject:
			it.obj, it.warnings, it.err = decodeObject(loc, h, raw, h.kind == refused)
		case lazy && !json.Valid(raw):
			it.err = loc.errorf("not valid JSON")
		}
	}
	return it
}

// validWithout reports whether obj, whose members are fields, is valid
// JSON once the value of its last member named key is taken as valid:
// that value is checked item by item where it is decoded.
func validWithout(obj []byte, fields jsonFields, key string) bool {
	for i := len(fields) - 1; i >= 0; i-- {
		if f := fields[i]; f.key == key {
			rest := make([]byte, 0, len(obj)-len(f.val)+4)
			rest = append(append(append(rest, obj[:f.at]...), "null"...), obj[f.at+len(f.val):]...)
			return json.Valid(rest)
		}
	}
	return json.Valid(obj)
}

// classify tells the kinds kube-proxy reads from the rest.
func classify(h header) (itemClass, []string) {
	tm := metav1.TypeMeta{APIVersion: h.apiVersion, Kind: h.kind}
	known := []metav1.TypeMeta{nodeType, serviceType, endpointSliceType, serviceCIDRType}
	for _, k := range known {
		if tm == k {
			return itemObject, nil
		}
	}
	for _, k := range known {
		if h.kind == k.Kind {
			return itemWarning, []string{fmt.Sprintf("apiVersion %q is not supported (want %s): skipped", h.apiVersion, k.APIVersion)}
		}
	}
	return itemOther, nil
}

// examineAll examines items (whose locations are locs) on every CPU
// (forEach), and returns them in order. r says how the items are read:
// lazily, and from a mapped file, where a fault while reading one becomes
// that item's error (see mapfile.go).
func examineAll(locs []location, raws [][]byte, itemKind string, r reading) []item {
	out := make([]item, len(raws))
	forEach(len(raws), func(i int) {
		if r.mapped {
			defer guardFault(func(err error) { out[i] = item{err: locs[i].wrap(err)} })()
		}
		out[i] = examine(locs[i], raws[i], itemKind, r)
		r.count(out[i])
	})
	return out
}

// newObject is an empty object of a kind kube-proxy reads.
func newObject(kind string) any {
	switch kind {
	case nodeType.Kind:
		return &corev1.Node{}
	case serviceType.Kind:
		return &corev1.Service{}
	case endpointSliceType.Kind:
		return &discoveryv1.EndpointSlice{}
	}
	return &networkingv1.ServiceCIDR{}
}

// unmarshalStrict decodes raw into a new object of kind as the API
// machinery's strict JSON serializer does: sigs.k8s.io/json with
// case-sensitive names, integers kept as integers, and unknown and
// duplicate fields returned as strictErrs. Unlike the serializer it does
// not parse the object once more to learn its kind: the header says.
//
// It first tries encoding/json/v2 (the go-json-experiment module, which
// becomes the standard library's in Go 1.27), about 2.7 times as fast on
// Services and EndpointSlices, with unknown and duplicate fields as
// errors. Where that succeeds the object has no unknown or duplicate field
// and both decoders give the same object, which FuzzUnmarshalStrict
// holds; anything else (an unknown field, a type error, a null where v2
// and v1 differ) is decoded again by sigs.k8s.io/json, whose results and
// messages are the API server's.
func unmarshalStrict(kind string, raw []byte) (obj any, strictErrs []error, err error) {
	if obj, ok := unmarshalV2(kind, raw); ok {
		return obj, nil, nil
	}
	return unmarshalV1(kind, raw)
}

// unmarshalV2 is unmarshalStrict's first try.
func unmarshalV2(kind string, raw []byte) (any, bool) {
	obj := newObject(kind)
	return obj, jsonv2.Unmarshal(raw, obj, v2Options) == nil
}

// v2Options are unmarshalV2's: unknown members refused, and IntOrString
// (a Service port's targetPort) read in place. Its UnmarshalJSON hands
// each value to encoding/json: about 6 % of the CPU of decoding a
// snapshot's objects.
var v2Options = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(true), jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
	jsonv2.UnmarshalFromFunc(unmarshalIntOrString),
	jsonv2.UnmarshalFromFunc(presizeEndpoints),
)))

// presizeEndpoints gives an EndpointSlice's endpoints their capacity
// before v2 reads them, and leaves the reading to v2 (it returns
// errors.ErrUnsupported): v2 grows a slice one element at a time through
// reflection, which copied every endpoint of a slice about twice.
//
// The capacity is the number of "addresses" names in the rest of the
// object, which every endpoint has: a vectorized search, where walking the
// list item by item cost about a third as much as v2's decoding of it.
// Where a string holds the name too, the list is a little too large. The
// count is capped at the API's most endpoints in a slice (a list of 96 KB
// at most), and each counted name, 11 bytes of input, reserves 96 bytes:
// an empty endpoint, "{}," (3 bytes), makes v2 allocate as much. So a
// hostile file cannot make it allocate more than reading a file of its
// size does.
func presizeEndpoints(dec *jsontext.Decoder, v *[]discoveryv1.Endpoint) error {
	if dec.PeekKind() != '[' {
		return errors.ErrUnsupported
	}
	// The buffer holds the rest of the object; the value follows the
	// member's name, a colon and perhaps spaces.
	buf := dec.UnreadBuffer()
	i := bytes.IndexByte(buf, '[')
	if i < 0 || len(bytes.Trim(buf[:i], " \t\r\n:")) > 0 {
		return errors.ErrUnsupported
	}
	if n := bytes.Count(buf[i:], addressesName); n > cap(*v) {
		*v = make([]discoveryv1.Endpoint, 0, min(n, maxSliceEndpoints))
	}
	return errors.ErrUnsupported
}

// addressesName is an endpoint's one required member, as JSON writes it.
var addressesName = []byte(`"addresses"`)

// unmarshalIntOrString reads what intstr.IntOrString's UnmarshalJSON
// accepts into the same value: a string, or an integer literal that fits
// an int32. Anything else (null, a float, an exponent, a number out of
// range) is an error, so that the object goes to unmarshalV1 and the API
// machinery decides it.
func unmarshalIntOrString(dec *jsontext.Decoder, v *intstr.IntOrString) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		v.Type, v.StrVal = intstr.String, tok.String()
		return nil
	case '0':
		n, err := strconv.ParseInt(tok.String(), 10, 32)
		if err != nil {
			return err
		}
		v.Type, v.IntVal = intstr.Int, int32(n)
		return nil
	}
	return errNotIntOrString
}

// maxSliceEndpoints is the most endpoints the API server takes in one
// EndpointSlice.
const maxSliceEndpoints = 1000

var errNotIntOrString = errors.New("neither a string nor an int32")

// unmarshalV1 is unmarshalStrict's second: the API machinery's way.
func unmarshalV1(kind string, raw []byte) (obj any, strictErrs []error, err error) {
	obj = newObject(kind)
	strictErrs, err = kjson.UnmarshalStrict(raw, obj)
	return obj, strictErrs, err
}

// decodeObject decodes one Node, Service, EndpointSlice or ServiceCIDR as
// the API machinery's strict JSON serializer does (unmarshalStrict), and
// gives it the defaults the API server gives it on create (defaults.go).
// Unknown and duplicate fields become warnings that say what was read
// (strictWarning); type errors are errors.
func decodeObject(loc location, h header, raw []byte, v2Refused bool) (obj any, warnings []string, err error) {
	var strictErrs []error
	if v2Refused {
		// examineTyped tried v2 on this object as this kind (on its bytes
		// before a typed List's item type was added to them, which v2
		// refuses as well).
		obj, strictErrs, err = unmarshalV1(h.kind, raw)
	} else {
		obj, strictErrs, err = unmarshalStrict(h.kind, raw)
	}
	if err != nil {
		return nil, nil, loc.wrap(err)
	}
	for _, e := range strictErrs {
		warnings = append(warnings, strictWarning(obj, e))
	}
	return finishObject(loc, h, obj, warnings)
}

// finishObject checks a decoded object's name and gives it its defaults.
func finishObject(loc location, h header, obj any, warnings []string) (any, []string, error) {
	if h.name == "" {
		return nil, nil, loc.errorf("metadata.name is required")
	}
	switch o := obj.(type) {
	case *corev1.Node:
		defaultNode(o)
	case *corev1.Service:
		defaultNamespace(&o.ObjectMeta)
		warnings = append(warnings, defaultService(o)...)
	case *discoveryv1.EndpointSlice:
		defaultNamespace(&o.ObjectMeta)
		defaultEndpointSlice(o)
	case *networkingv1.ServiceCIDR:
		defaultServiceCIDR(o)
	}
	return obj, warnings, nil
}
