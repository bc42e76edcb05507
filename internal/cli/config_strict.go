package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/inputlimit"
)

// maxConfigSize bounds a --config file: a KubeProxyConfiguration is a
// few KiB, and /dev/zero would otherwise be read until memory ran out.
// Tests lower it.
var maxConfigSize int64 = 4 << 20

// configFile is a KubeProxyConfiguration file, decoded, with the line of
// each field it sets ("iptables.masqueradeBit": 7), for messages.
type configFile struct {
	path  string
	lines map[string]int
	kubeProxyConfiguration
}

// at prefixes a message about the file's field with the file and the
// field's line: "--config kp.yaml:3: mode:".
func (c *configFile) at(field string) string {
	if line := c.lines[field]; line > 0 {
		return fmt.Sprintf("--config %s:%d: %s:", c.path, line, field)
	}
	return fmt.Sprintf("--config %s: %s:", c.path, field)
}

// readConfigFile reads a KubeProxyConfiguration file strictly, as
// kube-proxy's strict decoding does: a field that kube-proxy's schema does
// not have, or a field given twice, is an error naming it and its line.
func readConfigFile(path string) (*configFile, error) {
	data, err := inputlimit.ReadFile(path, maxConfigSize, "a --config file")
	if errors.As(err, new(*inputlimit.TooLargeError)) {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err) // names the path
	}
	c := &configFile{path: path, lines: map[string]int{}}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	// Both checkFields, which follows aliases, and sigs.k8s.io/yaml, which
	// copies what they name, would expand an alias bomb.
	if err := inputlimit.CheckNode(&doc, len(data)); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if err := checkFields(&doc, reflect.TypeFor[kubeProxyConfiguration](), "", c.lines); err != nil {
		return nil, fmt.Errorf("--config %s:%w", path, err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if err := json.Unmarshal(js, &c.kubeProxyConfiguration); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("%s got a %s, want %s", c.at(te.Field), te.Value, te.Type)
		}
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return c, c.checkType()
}

// checkType checks the kind and apiVersion, which kube-proxy requires.
func (c *configFile) checkType() error {
	if c.Kind != "KubeProxyConfiguration" {
		return fmt.Errorf("%s %q, want KubeProxyConfiguration", c.at("kind"), c.Kind)
	}
	if c.APIVersion != kubeProxyAPIVersion {
		return fmt.Errorf("%s %q, want %s (the version kube-proxy v1.37 reads)", c.at("apiVersion"), c.APIVersion, kubeProxyAPIVersion)
	}
	return nil
}

// fieldError is a key of the file that the schema refuses.
type fieldError struct {
	line    int
	field   string
	problem string
}

// Error starts with the line, to follow the file name: "kp.yaml:3: ...".
func (e *fieldError) Error() string {
	return fmt.Sprintf("%d: %s %q", e.line, e.problem, e.field)
}

// checkFields walks the YAML node n against the Go type t (json tags, as
// kube-proxy's decoder reads them, case and all), recording the line of
// each struct field under its dotted path. A key t lacks, or a key given
// twice, is a *fieldError.
func checkFields(n *yamlv3.Node, t reflect.Type, path string, lines map[string]int) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return checkFields(n.Content[0], t, path, lines)
	case yamlv3.AliasNode:
		return checkFields(n.Alias, t, path, lines)
	case yamlv3.SequenceNode:
		if t.Kind() != reflect.Slice {
			return nil
		}
		for _, item := range n.Content {
			if err := checkFields(item, t.Elem(), path, lines); err != nil {
				return err
			}
		}
	case yamlv3.MappingNode:
		return checkMapping(n, t, path, lines)
	}
	return nil
}

// checkMapping checks the keys of a mapping against a struct's fields; a
// map's keys are free, and its values are checked against its element type.
func checkMapping(n *yamlv3.Node, t reflect.Type, path string, lines map[string]int) error {
	if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
		return nil
	}
	fields := jsonFields(t)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		field := key.Value
		if path != "" {
			field = path + "." + key.Value
		}
		if seen[key.Value] {
			return &fieldError{line: key.Line, field: field, problem: "duplicate field"}
		}
		seen[key.Value] = true
		elem := t
		if t.Kind() == reflect.Map {
			elem = t.Elem()
		} else if elem = fields[key.Value]; elem == nil {
			return &fieldError{line: key.Line, field: field, problem: "unknown field"}
		}
		lines[field] = key.Line
		if err := checkFields(value, elem, field, lines); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields returns a struct's fields by their JSON names, with those of
// its embedded structs, as encoding/json inlines them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return fields
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			for n, ft := range jsonFields(f.Type) {
				fields[n] = ft
			}
		case name != "":
			fields[name] = f.Type
		case f.IsExported():
			fields[f.Name] = f.Type
		}
	}
	return fields
}
