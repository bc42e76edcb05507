package cli

import (
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"sigs.k8s.io/yaml"
)

// outputAPIVersion is the group and version of every object the tool
// prints with -o json or -o yaml. docs/OUTPUT.md describes each kind.
const outputAPIVersion = "svcproxy.kubectl.io/v1alpha1"

// The kinds of the machine output.
const (
	kindRenderedRuleset = "RenderedRuleset"
	kindPlan            = "Plan"
	kindNodePlans       = "NodePlans"
	kindVersion         = "Version"
)

// typeMeta heads every machine output, as a Kubernetes object's does.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func newTypeMeta(kind string) typeMeta {
	return typeMeta{APIVersion: outputAPIVersion, Kind: kind}
}

// renderedRuleset is render's -o json|yaml: the mode's rulesets, one per
// IP family, in the mode's own shape.
type renderedRuleset struct {
	typeMeta
	Mode     Mode `json:"mode"`
	Rulesets any  `json:"rulesets"`
}

func newRenderedRuleset(d *desired) *renderedRuleset {
	r := &renderedRuleset{typeMeta: newTypeMeta(kindRenderedRuleset), Mode: d.mode}
	switch d.mode {
	case ModeUserspace:
		r.Rulesets = d.userspace
	case ModeIPVS:
		r.Rulesets = d.ipvs
	case ModeNFTables:
		r.Rulesets = d.nftables
	default:
		r.Rulesets = d.iptables
	}
	return r
}

func validateOutput(format string) error {
	switch format {
	case "text", "json", "yaml":
		return nil
	}
	if _, ok, err := templatePrinter(format); ok {
		return err
	}
	return fmt.Errorf("--output %q: must be text, json, yaml, or a template as kubectl takes it: jsonpath=..., jsonpath-file=..., jsonpath-as-json=..., go-template=..., go-template-file=...", format)
}

// writeData writes v as indented JSON or as YAML, with every nil list and
// map filled in (see fillNil), so that neither form holds a null; or
// through the -o template's printer.
func writeData(w io.Writer, format string, v any) error {
	if p, ok, err := templatePrinter(format); ok {
		if err != nil {
			return err
		}
		return printTemplate(w, p, v)
	}
	fillNil(reflect.ValueOf(v))
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	data, err := yaml.Marshal(v)
	if err == nil {
		_, err = w.Write(data)
	}
	return err
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshalsItself reports whether values of t choose their own encoding.
func marshalsItself(t reflect.Type) bool {
	for _, t := range []reflect.Type{t, reflect.PointerTo(t)} {
		if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) {
			return true
		}
	}
	return false
}

// fillNil replaces, in place, every nil slice and map that v reaches
// through pointers, interfaces, exported struct fields, slices, arrays and
// maps with an empty one: encoding/json prints a nil list as null, an
// empty one as [] (and omitempty drops both). Values that marshal
// themselves are left alone. The output is printed and dropped, so the
// change is never seen.
func fillNil(v reflect.Value) {
	if !v.IsValid() || marshalsItself(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fillElem(v)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillNil(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Map:
		if v.IsNil() {
			if v.CanSet() {
				v.Set(empty(v.Type()))
			}
			return
		}
		fillContents(v)
	case reflect.Array:
		fillContents(v)
	}
}

// fillElem fills what a non-nil pointer or interface holds. A value held
// in an interface is not addressable: it is filled in a copy that then
// replaces it, when the interface can be set.
func fillElem(v reflect.Value) {
	e := v.Elem()
	if v.Kind() == reflect.Pointer || e.Kind() == reflect.Pointer || !v.CanSet() {
		fillNil(e)
		return
	}
	c := reflect.New(e.Type()).Elem()
	c.Set(e)
	fillNil(c)
	v.Set(c)
}

// fillContents fills the elements of a slice, array or map.
func fillContents(v reflect.Value) {
	if v.Kind() != reflect.Map {
		for i := range v.Len() {
			fillNil(v.Index(i))
		}
		return
	}
	iter := v.MapRange()
	for iter.Next() {
		c := reflect.New(v.Type().Elem()).Elem()
		c.Set(iter.Value())
		fillNil(c)
		v.SetMapIndex(iter.Key(), c)
	}
}

func empty(t reflect.Type) reflect.Value {
	if t.Kind() == reflect.Map {
		return reflect.MakeMap(t)
	}
	return reflect.MakeSlice(t, 0, 0)
}
