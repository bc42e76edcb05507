package cluster

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRoundTrip(t *testing.T) {
	inputs := map[string]string{"kubectl List": kubectlList, "build fixture": buildFixture,
		// Characters JSON takes raw and YAML does not.
		"unprintable": `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","annotations":{"x":"\u007f\u0080\u0085\u009f\ufeff\ufffe\uffff é"}},"spec":{"clusterIP":"10.96.0.10","ports":[{"port":80}]}}`}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			s := mustDecode(t, in)
			s.Warnings = nil
			for _, format := range []string{"yaml", "json"} {
				var buf bytes.Buffer
				write := s.WriteYAML
				if format == "json" {
					write = s.WriteJSON
				}
				if err := write(&buf); err != nil {
					t.Fatal(err)
				}
				got, err := Decode("out."+format, buf.Bytes())
				if err != nil {
					t.Fatalf("%s: Decode: %v\n%s", format, err, buf.String())
				}
				if diff := cmp.Diff(s, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s round trip (-want +got):\n%s", format, diff)
				}
				if !reflect.DeepEqual(s, got) {
					t.Errorf("%s round trip: not reflect.DeepEqual", format)
				}
				var again bytes.Buffer
				if err := write(&again); err != nil {
					t.Fatal(err)
				}
				if again.String() != buf.String() {
					t.Errorf("%s: writing is not idempotent", format)
				}
			}
		})
	}
}

func TestWriteYAMLOrder(t *testing.T) {
	s := mustDecode(t, kubectlList)
	var buf bytes.Buffer
	if err := s.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, "apiVersion: v1\nitems:\n") || !strings.Contains(out, "\nkind: List\n") {
		t.Errorf("not a v1 List:\n%s", out)
	}
	if strings.Contains(out, "managedFields") || strings.Contains(out, "kind: Pod") {
		t.Errorf("managedFields or Pod written:\n%s", out)
	}
	var last int
	for _, kind := range []string{"kind: Node", "kind: ServiceCIDR", "kind: Service\n", "kind: EndpointSlice"} {
		i := strings.Index(out, kind)
		if i < last {
			t.Errorf("%q at %d, before the previous kind (%d)", kind, i, last)
		}
		last = i
	}
}
