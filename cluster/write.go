package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes the snapshot as one `apiVersion: v1, kind: List`, the way
// `kubectl get -o yaml` prints it: Nodes, ServiceCIDRs, Services, then
// EndpointSlices, each sorted by namespace/name, without managedFields.
// Decode reads it back to an equal Snapshot (Warnings aside).
func (s *Snapshot) WriteYAML(w io.Writer) error {
	data, err := s.marshal("", "")
	if err != nil {
		return err
	}
	if data, err = yaml.JSONToYAML(escapeUnprintable(data)); err != nil {
		return fmt.Errorf("encode snapshot as YAML: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// WriteJSON is WriteYAML in JSON, indented by four spaces as kubectl does.
func (s *Snapshot) WriteJSON(w io.Writer) error {
	data, err := s.marshal("", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func (s *Snapshot) marshal(prefix, indent string) ([]byte, error) {
	c := s.canonical()
	list := corev1.List{}
	list.APIVersion, list.Kind = "v1", "List"
	add := func(obj runtime.Object) {
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	for i := range c.Nodes {
		add(&c.Nodes[i])
	}
	for i := range c.ServiceCIDRs {
		add(&c.ServiceCIDRs[i])
	}
	for i := range c.Services {
		add(&c.Services[i])
	}
	for i := range c.EndpointSlices {
		add(&c.EndpointSlices[i])
	}
	var data []byte
	var err error
	if indent == "" {
		data, err = json.Marshal(list)
	} else {
		data, err = json.MarshalIndent(list, prefix, indent)
	}
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return data, nil
}

// canonical is a normalized deep copy of s: s itself is left alone, since a
// caller may have built it by hand.
func (s *Snapshot) canonical() *Snapshot {
	c := &Snapshot{}
	for i := range s.Nodes {
		c.Nodes = append(c.Nodes, *s.Nodes[i].DeepCopy())
	}
	for i := range s.Services {
		c.Services = append(c.Services, *s.Services[i].DeepCopy())
	}
	for i := range s.EndpointSlices {
		c.EndpointSlices = append(c.EndpointSlices, *s.EndpointSlices[i].DeepCopy())
	}
	for i := range s.ServiceCIDRs {
		c.ServiceCIDRs = append(c.ServiceCIDRs, *s.ServiceCIDRs[i].DeepCopy())
	}
	c.Normalize()
	return c
}

// escapeUnprintable writes as \u escapes the characters that JSON allows
// raw in a string but YAML does not in a document: DEL, the C1 controls,
// the byte order mark and U+FFFE/U+FFFF. JSONToYAML reads the JSON as
// YAML, and refused a snapshot holding one ("control characters are not
// allowed"): an annotation may hold any of them. Outside strings the JSON
// that marshal writes is ASCII, so every such character is in a string.
func escapeUnprintable(data []byte) []byte {
	var out []byte
	for i := 0; i < len(data); {
		r, n := rune(data[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(data[i:])
		}
		if yamlPrintable(r) {
			if out != nil {
				out = append(out, data[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(data)+64), data[:i]...)
		}
		out = fmt.Appendf(out, `\u%04x`, r)
		i += n
	}
	if out == nil {
		return data
	}
	return out
}

// yamlPrintable reports whether YAML takes r raw in a double-quoted
// scalar: its printable set, less the line break NEL (U+0085) and the
// byte order mark. Control characters below 0x20 never reach here raw:
// JSON escapes them.
func yamlPrintable(r rune) bool {
	switch {
	case r < 0x7f:
		return true
	case r <= 0x9f, r == 0xfeff, r == 0xfffe, r == 0xffff:
		return false
	}
	return r != utf8.RuneError && r <= 0x10ffff && (r < 0xd800 || r > 0xdfff)
}
