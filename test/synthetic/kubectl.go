package synthetic

import (
	"encoding/json"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// WriteKubectlYAML writes s as `kubectl get nodes,services,endpointslices
// -A -o yaml` prints it: a v1 List of the objects as they are, marshalled
// to JSON and that JSON to YAML, as kubectl's printer does (managedFields
// included, unlike Snapshot.WriteYAML).
func WriteKubectlYAML(w io.Writer, s *cluster.Snapshot) error {
	data, err := json.Marshal(kubectlList(s))
	if err == nil {
		data, err = yaml.JSONToYAML(data)
	}
	if err == nil {
		_, err = w.Write(data)
	}
	return err
}

// WriteKubectlJSON is WriteKubectlYAML for `-o json`: indented by four
// spaces, as kubectl prints it.
func WriteKubectlJSON(w io.Writer, s *cluster.Snapshot) error {
	data, err := json.MarshalIndent(kubectlList(s), "", "    ")
	if err == nil {
		_, err = w.Write(append(data, '\n'))
	}
	return err
}

func kubectlList(s *cluster.Snapshot) *corev1.List {
	list := &corev1.List{}
	list.APIVersion, list.Kind = "v1", "List"
	add := func(obj runtime.Object) {
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	for i := range s.Nodes {
		add(&s.Nodes[i])
	}
	for i := range s.ServiceCIDRs {
		add(&s.ServiceCIDRs[i])
	}
	for i := range s.Services {
		add(&s.Services[i])
	}
	for i := range s.EndpointSlices {
		add(&s.EndpointSlices[i])
	}
	return list
}

func typesUID(s string) types.UID { return types.UID(s) }

func ptrTo[T any](v T) *T { return &v }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
