package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	return decode(name, data, reading{})
}

// reading says how a file is read.
type reading struct {
	// mapped: the file is mapped into memory, which faults if the file
	// shrinks while it is read (see mapfile.go).
	mapped bool
	// lazy: the JSON documents were cut out of the file without checking
	// that they are valid JSON, and whatever is not decoded is checked
	// where it is examined. A whole-document json.Valid was a tenth of
	// decoding a large snapshot, on one CPU; decoding checks the objects
	// anyway, on every CPU. Where that finds anything wrong, the file is
	// decoded once more the careful way, whose errors say where.
	lazy bool
	// longWay: every object is examined the long way (see examineTyped).
	// Only tests set it, to hold the one-pass way to the long one.
	longWay bool
	// examined, if not nil, counts the objects examined so far, for a
	// progress line while a large file decodes (LoadFileCounting).
	examined *atomic.Int64
}

// count adds an examined object to r.examined.
func (r reading) count(it item) {
	if r.examined != nil && it.class == itemObject {
		r.examined.Add(1)
	}
}

// decode is Decode; r says whether data is a mapped file and what counts
// the objects examined.
func decode(name string, data []byte, r reading) (*Snapshot, error) {
	data, err := utf8Text(data)
	if err != nil {
		return nil, &DecodeError{File: name, Err: err}
	}
	if docs, ok := splitJSONLazy(data); ok {
		lazy := r
		lazy.lazy = true
		if snap, err := decodeDocuments(name, docs, lazy); err == nil {
			return snap, nil
		}
		if r.examined != nil {
			r.examined.Store(0) // the careful way counts them again
		}
	}
	return decodeDocuments(name, splitDocuments(data), r)
}

func decodeDocuments(name string, docs []document, r reading) (*Snapshot, error) {
	d := &decoder{
		file:    name,
		reading: r,
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

type decoder struct {
	file string
	reading
	snap *Snapshot
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
	raw, fields := doc.data, doc.fields
	if !doc.json {
		var err error
		if raw, fields, err = yamlToJSON(doc.data, doc.line); err != nil {
			return loc.wrap(err)
		}
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil // "---" followed by nothing, or "~"
	}
	if fields != nil {
		it := examineFields(loc, raw, fields, "", d.reading, "")
		d.count(it)
		return d.accept(it, 0)
	}
	return d.decodeValue(loc, raw, 0)
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
func readHeader(fields jsonFields) header {
	str := func(raw []byte) string {
		s, _ := jsonString(raw)
		return s
	}
	h := header{apiVersion: str(fields.get("apiVersion")), kind: str(fields.get("kind"))}
	if meta, ok := jsonObjectFields(fields.get("metadata")); ok {
		h.namespace, h.name = str(meta.get("namespace")), str(meta.get("name"))
	}
	return h
}

// decodeValue decodes one JSON value: a List or a single object. Unless
// the reading is lazy, the document was valid JSON when split (a YAML
// document's JSON is valid by construction), and is not checked again.
func (d *decoder) decodeValue(loc location, raw []byte, depth int) error {
	it := examine(loc, raw, "", d.reading)
	d.count(it)
	return d.accept(it, depth)
}

// accept keeps an examined value: its object, its warnings, or, for a
// List, its items.
func (d *decoder) accept(it item, depth int) error {
	if it.err != nil {
		return it.err
	}
	for _, w := range it.warnings {
		d.warn(it.loc, "%s", w)
	}
	switch it.class {
	case itemList:
		return d.decodeList(it, depth)
	case itemOther:
		d.skip(it.loc, it.h)
	case itemObject:
		d.keep(it.loc, it.obj)
	}
	return nil
}

func (d *decoder) decodeList(it item, depth int) error {
	loc, h := it.loc, it.h
	if depth >= maxListDepth {
		return loc.errorf("Lists nested more than %d deep", maxListDepth)
	}
	list := it.list
	if !it.listCut && len(it.items) > 0 && string(it.items) != "null" {
		var ok bool
		if list, ok = jsonArrayItems(it.items); !ok {
			return loc.errorf("items: not a list")
		}
	}
	itemKind := ""
	if h.kind != "List" {
		itemKind = h.apiVersion + " " + strings.TrimSuffix(h.kind, "List")
	}
	locs := make([]location, len(list))
	for i := range list {
		locs[i] = location{file: loc.file, doc: loc.doc, item: strconv.Itoa(i + 1)}
		if loc.item != "" {
			locs[i].item = loc.item + "." + locs[i].item
		}
	}
	examined := examineAll(locs, list, itemKind, d.reading)
	d.reserve(examined)
	for _, it := range examined {
		if err := d.accept(it, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// withType re-encodes an item of a typed List with the List's item type.
func withType(fields jsonFields, itemKind string) []byte {
	apiVersion, kind, _ := strings.Cut(itemKind, " ")
	re := make(map[string]json.RawMessage, len(fields)+2)
	for _, f := range fields {
		re[f.key] = f.val
	}
	re["apiVersion"], _ = json.Marshal(apiVersion)
	re["kind"], _ = json.Marshal(kind)
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

// reserve grows the snapshot's lists for the objects among items: growing
// them one append at a time copies every object several times.
func (d *decoder) reserve(items []item) {
	var nodes, services, epSlices, cidrs int
	for _, it := range items {
		switch it.obj.(type) {
		case *corev1.Node:
			nodes++
		case *corev1.Service:
			services++
		case *discoveryv1.EndpointSlice:
			epSlices++
		case *networkingv1.ServiceCIDR:
			cidrs++
		}
	}
	d.snap.Nodes = slices.Grow(d.snap.Nodes, nodes)
	d.snap.Services = slices.Grow(d.snap.Services, services)
	d.snap.EndpointSlices = slices.Grow(d.snap.EndpointSlices, epSlices)
	d.snap.ServiceCIDRs = slices.Grow(d.snap.ServiceCIDRs, cidrs)
}

// keep adds a decoded object to the snapshot.
func (d *decoder) keep(loc location, obj any) {
	switch o := obj.(type) {
	case *corev1.Node:
		add(d, loc, "Node", &o.ObjectMeta, &d.snap.Nodes, *o)
	case *corev1.Service:
		add(d, loc, "Service", &o.ObjectMeta, &d.snap.Services, *o)
	case *discoveryv1.EndpointSlice:
		add(d, loc, "EndpointSlice", &o.ObjectMeta, &d.snap.EndpointSlices, *o)
	case *networkingv1.ServiceCIDR:
		add(d, loc, "ServiceCIDR", &o.ObjectMeta, &d.snap.ServiceCIDRs, *o)
	}
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
