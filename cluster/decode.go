package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// maxListDepth bounds List-in-List nesting (kubectl prints one level).
const maxListDepth = 4

// DecodeError is a snapshot file that could not be decoded. Its text names
// the file, the document (when the file has several), the List item (when
// inside a List) and the object, e.g.
//
//	snapshot.yaml: document 3 (Service ns1/web): json: cannot unmarshal ...
type DecodeError struct {
	File     string
	Document int    // 1-based; 0 when the file holds a single document
	Item     string // 1-based List item, "2.3" inside nested Lists; "" outside Lists
	Object   string // "Service ns1/web", when known
	Err      error
}

func (e *DecodeError) Error() string {
	return location{file: e.File, doc: e.Document, item: e.Item, object: e.Object}.String() + ": " + e.Err.Error()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// location is where an object sits in a snapshot file.
type location struct {
	file   string
	doc    int
	item   string
	object string
}

// position is the location without the file name.
func (l location) position() string {
	var pos []string
	if l.doc > 0 {
		pos = append(pos, fmt.Sprintf("document %d", l.doc))
	}
	if l.item != "" {
		pos = append(pos, "item "+l.item)
	}
	p := strings.Join(pos, ", ")
	switch {
	case p != "" && l.object != "":
		return p + " (" + l.object + ")"
	case p != "":
		return p
	}
	return l.object
}

func (l location) String() string {
	if p := l.position(); p != "" {
		return l.file + ": " + p
	}
	return l.file
}

func (l location) errorf(format string, args ...any) error {
	return &DecodeError{File: l.file, Document: l.doc, Item: l.item, Object: l.object, Err: fmt.Errorf(format, args...)}
}

func (l location) wrap(err error) error {
	return &DecodeError{File: l.file, Document: l.doc, Item: l.item, Object: l.object, Err: err}
}

// Decode parses what `kubectl get nodes,services,endpointslices,servicecidrs
// -o yaml` (or -o json) prints: multi-document YAML, a v1 List (possibly of
// typed lists such as ServiceList), or a JSON object or stream. name is only
// used in messages. Objects of other kinds are skipped with a warning; so are
// fields the v1.37 API types do not know. Namespaced objects without a
// namespace are put in "default", as kubectl would. When an object appears
// twice, the later one wins, with a warning. Every object gets the defaults
// the API server gives it on create (see defaults.go), so that a file
// builds as the same objects read from the API server would.
func Decode(name string, data []byte) (*Snapshot, error) {
	data, err := utf8Text(data)
	if err != nil {
		return nil, &DecodeError{File: name, Err: err}
	}
	docs := splitDocuments(data)
	d := &decoder{
		file:    name,
		codec:   apiDecoder(),
		snap:    &Snapshot{},
		index:   map[string]int{},
		skipped: map[string]*skippedKind{},
	}
	for i, doc := range docs {
		loc := location{file: name}
		if len(docs) > 1 {
			loc.doc = i + 1
		}
		if doc.err != nil {
			return nil, loc.wrap(doc.err)
		}
		if err := d.decodeDocument(loc, doc); err != nil {
			return nil, err
		}
	}
	d.reportSkipped()
	d.snap.Normalize()
	return d.snap, nil
}

// apiDecoder decodes the API groups a snapshot holds (core/v1,
// discovery/v1, networking/v1) strictly, so that unknown and duplicate
// fields are reported. Its scheme registers only those groups: the
// client libraries' scheme of every group is not needed to read a file.
var apiDecoder = sync.OnceValue(func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, discoveryv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("register API types: %v", err)) // static tables: cannot fail
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
})

type decoder struct {
	file  string
	codec runtime.Decoder
	snap  *Snapshot
	// index maps "Kind namespace/name" to the object's position in its list.
	index map[string]int
	// skipped counts objects of other kinds, reported once per kind.
	skipped      map[string]*skippedKind
	skippedOrder []string
}

type skippedKind struct {
	count int
	first location
}

func (d *decoder) warn(loc location, format string, args ...any) {
	d.snap.Warnings = append(d.snap.Warnings, Warning{Object: loc.String(), Message: fmt.Sprintf(format, args...)})
}

func (d *decoder) decodeDocument(loc location, doc document) error {
	raw := doc.data
	if !doc.json {
		var err error
		if raw, err = yamlToJSON(doc.data, doc.line); err != nil {
			return loc.wrap(err)
		}
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil // "---" followed by nothing, or "~"
	}
	return d.decodeValue(loc, raw, "", 0)
}

// header is the loosely read identity of one object.
type header struct {
	apiVersion, kind, namespace, name string
}

func (h header) describe() string {
	kind := h.kind
	if kind == "" {
		kind = "object"
	}
	if h.name != "" {
		return kind + " " + objectName(&metav1.ObjectMeta{Namespace: h.namespace, Name: h.name})
	}
	if h.kind == "" {
		return ""
	}
	return kind
}

// readHeader reads apiVersion, kind and metadata without failing on wrong
// types, so that errors about the rest of the object can name it.
func readHeader(fields map[string][]byte) header {
	str := func(raw []byte) string {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	h := header{apiVersion: str(fields["apiVersion"]), kind: str(fields["kind"])}
	if meta, ok := jsonObjectFields(fields["metadata"]); ok {
		h.namespace, h.name = str(meta["namespace"]), str(meta["name"])
	}
	return h
}

// decodeValue decodes one JSON object: a List or a single object. itemType
// is the "apiVersion Kind" that items of a typed List (ServiceList)
// default to.
func (d *decoder) decodeValue(loc location, raw []byte, itemKind string, depth int) error {
	if depth == 0 && !json.Valid(raw) {
		var v any
		return loc.wrap(json.Unmarshal(raw, &v))
	}
	fields, ok := jsonObjectFields(raw)
	if !ok {
		return loc.errorf("not a Kubernetes object: expected a mapping with apiVersion and kind")
	}
	if itemKind != "" && len(fields["kind"]) == 0 {
		// Items of a typed List as the API server returns it carry no type.
		if raw = withType(fields, itemKind); raw == nil {
			return loc.errorf("cannot re-encode item")
		}
	}
	h := readHeader(fields)
	loc.object = h.describe()
	switch {
	case h.kind == "":
		return loc.errorf("object has no kind")
	case h.kind == "List" || strings.HasSuffix(h.kind, "List") && fields["items"] != nil:
		return d.decodeList(loc, h, fields["items"], depth)
	}
	tm := metav1.TypeMeta{APIVersion: h.apiVersion, Kind: h.kind}
	switch tm {
	case nodeType, serviceType, endpointSliceType, serviceCIDRType:
		return d.decodeObject(loc, h, raw)
	}
	for _, known := range []metav1.TypeMeta{nodeType, serviceType, endpointSliceType, serviceCIDRType} {
		if h.kind == known.Kind {
			d.warn(loc, "apiVersion %q is not supported (want %s): skipped", h.apiVersion, known.APIVersion)
			return nil
		}
	}
	d.skip(loc, h)
	return nil
}

func (d *decoder) decodeList(loc location, h header, items []byte, depth int) error {
	if depth >= maxListDepth {
		return loc.errorf("Lists nested more than %d deep", maxListDepth)
	}
	var list [][]byte
	if len(items) > 0 && string(items) != "null" {
		var ok bool
		if list, ok = jsonArrayItems(items); !ok {
			return loc.errorf("items: not a list")
		}
	}
	itemKind := ""
	if h.kind != "List" {
		itemKind = h.apiVersion + " " + strings.TrimSuffix(h.kind, "List")
	}
	for i, item := range list {
		itemLoc := location{file: loc.file, doc: loc.doc, item: fmt.Sprint(i + 1)}
		if loc.item != "" {
			itemLoc.item = loc.item + "." + itemLoc.item
		}
		if err := d.decodeValue(itemLoc, item, itemKind, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// withType gives an item of a typed List the List's item type, in its
// fields and in its re-encoded JSON.
func withType(fields map[string][]byte, itemKind string) []byte {
	apiVersion, kind, _ := strings.Cut(itemKind, " ")
	fields["apiVersion"], _ = json.Marshal(apiVersion)
	fields["kind"], _ = json.Marshal(kind)
	re := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		re[k] = v
	}
	raw, _ := json.Marshal(re)
	return raw
}

// skip records an object of a kind kube-proxy does not read.
func (d *decoder) skip(loc location, h header) {
	key := h.apiVersion + " " + h.kind
	sk := d.skipped[key]
	if sk == nil {
		sk = &skippedKind{first: loc}
		d.skipped[key] = sk
		d.skippedOrder = append(d.skippedOrder, key)
	}
	sk.count++
}

func (d *decoder) reportSkipped() {
	for _, key := range d.skippedOrder {
		sk := d.skipped[key]
		_, kind, _ := strings.Cut(key, " ")
		if sk.count == 1 {
			d.warn(sk.first, "kind %s is not used by kube-proxy: skipped", kind)
			continue
		}
		d.warn(location{file: d.file}, "%d objects of kind %s are not used by kube-proxy: skipped (first: %s)",
			sk.count, kind, sk.first.position())
	}
}

// decodeObject decodes one Node, Service, EndpointSlice or ServiceCIDR with
// the Kubernetes scheme. Unknown and duplicate fields become warnings; type
// errors are errors.
func (d *decoder) decodeObject(loc location, h header, raw []byte) error {
	obj, _, err := d.codec.Decode(raw, nil, nil)
	if strictErr, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
		for _, e := range strictErr.Errors() {
			d.warn(loc, "%v: ignored", e)
		}
		err = nil
	}
	if err != nil {
		return loc.wrap(err)
	}
	if h.name == "" {
		return loc.errorf("metadata.name is required")
	}
	// Each object gets the defaults the API server would give it (defaults.go).
	switch o := obj.(type) {
	case *corev1.Node:
		defaultNode(o)
		add(d, loc, "Node", &o.ObjectMeta, &d.snap.Nodes, *o)
	case *corev1.Service:
		defaultNamespace(&o.ObjectMeta)
		for _, w := range defaultService(o) {
			d.warn(loc, "%s", w)
		}
		add(d, loc, "Service", &o.ObjectMeta, &d.snap.Services, *o)
	case *discoveryv1.EndpointSlice:
		defaultNamespace(&o.ObjectMeta)
		defaultEndpointSlice(o)
		add(d, loc, "EndpointSlice", &o.ObjectMeta, &d.snap.EndpointSlices, *o)
	case *networkingv1.ServiceCIDR:
		defaultServiceCIDR(o)
		add(d, loc, "ServiceCIDR", &o.ObjectMeta, &d.snap.ServiceCIDRs, *o)
	default:
		return loc.errorf("decoded to unexpected type %T", obj)
	}
	return nil
}

func defaultNamespace(m *metav1.ObjectMeta) {
	if m.Namespace == "" {
		m.Namespace = metav1.NamespaceDefault
	}
}

// add appends obj to list, or replaces an earlier object of the same name.
func add[T any](d *decoder, loc location, kind string, meta *metav1.ObjectMeta, list *[]T, obj T) {
	key := kind + " " + objectName(meta)
	if i, ok := d.index[key]; ok {
		(*list)[i] = obj
		d.warn(loc, "duplicate %s: replaces the earlier one", key)
		return
	}
	d.index[key] = len(*list)
	*list = append(*list, obj)
}
