package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// templatePrinter is kubectl's printer for a -o format that takes a
// template (jsonpath=..., jsonpath-file=..., jsonpath-as-json=...,
// go-template=..., go-template-file=..., template=..., templatefile=...),
// from cli-runtime's print flags, as kubectl builds it. ok is false for
// any other format.
func templatePrinter(format string) (p printers.ResourcePrinter, ok bool, err error) {
	name, _, _ := strings.Cut(format, "=")
	jsonPath := genericclioptions.NewJSONPathPrintFlags("", false)
	goTemplate := genericclioptions.NewGoTemplatePrintFlags()
	switch {
	case slices.Contains(jsonPath.AllowedFormats(), name):
		p, err = jsonPath.ToPrinter(format)
	case slices.Contains(goTemplate.AllowedFormats(), name):
		p, err = goTemplate.ToPrinter(format)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("--output %s: %w", format, err)
	}
	return p, true, nil
}

// printTemplate prints v, one of the tool's objects, through printer p:
// the template sees the object as -o json prints it.
func printTemplate(w io.Writer, p printers.ResourcePrinter, v any) error {
	fillNil(reflect.ValueOf(v))
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	return p.PrintObj(&unstructured.Unstructured{Object: obj}, w)
}

// outputName is -o name: as kubectl's, one "kind/name" line per object,
// the objects being the Services the output is about (those render
// serves on the node; those plan --against changes), printed by
// cli-runtime's name printer. kubectl prints no namespace either: -n
// (or --all-namespaces) tells which.
const outputName = "name"

// printServiceNames prints each Service ("namespace/name") as kubectl's
// -o name does.
func printServiceNames(w io.Writer, services []string) error {
	p, err := genericclioptions.NewNamePrintFlags("").ToPrinter(outputName)
	if err != nil {
		return err
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, s := range services {
		ns, name, _ := strings.Cut(s, "/")
		list.Items = append(list.Items, unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"namespace": ns, "name": name},
		}})
	}
	return p.PrintObj(list, w)
}
