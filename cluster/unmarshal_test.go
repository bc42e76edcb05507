package cluster

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	discoveryv1 "k8s.io/api/discovery/v1"
	kjson "sigs.k8s.io/json"
)

// unmarshalSeeds are objects of the four kinds with every field the
// decoder's fast path must agree on, and inputs where encoding/json/v2 and
// v1 differ (null, duplicates, case, numbers, escapes).
var unmarshalSeeds = []struct {
	kind string
	raw  string
}{
	{"Service", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"ns1","uid":"u1","resourceVersion":"7",
		"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"web"},"annotations":{"a":"b"},
		"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u","controller":true}]},
		"spec":{"type":"LoadBalancer","clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10","fd00::a"],"ipFamilies":["IPv4","IPv6"],
		"ipFamilyPolicy":"PreferDualStack","externalIPs":["192.0.2.1"],"loadBalancerSourceRanges":["10.0.0.0/8"],
		"externalTrafficPolicy":"Local","internalTrafficPolicy":"Cluster","healthCheckNodePort":30001,
		"sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":300}},"trafficDistribution":"PreferClose",
		"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080},{"name":"dns","protocol":"UDP","port":53,"targetPort":"dns","appProtocol":"dns"}],
		"selector":{"app":"web"},"publishNotReadyAddresses":false,"allocateLoadBalancerNodePorts":true},
		"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.5","ipMode":"VIP","ports":[{"port":80,"protocol":"TCP","error":null}]}]}}}`},
	{"EndpointSlice", `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"web-x","namespace":"ns1",
		"labels":{"kubernetes.io/service-name":"web"},"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"2026-01-02T03:04:05Z"}},
		"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true,"serving":true,"terminating":false},
		"hostname":"h","nodeName":"node-1","zone":"z1","hints":{"forZones":[{"name":"z1"}],"forNodes":[{"name":"node-1"}]},
		"targetRef":{"kind":"Pod","namespace":"ns1","name":"p","uid":"u"}},{"addresses":["10.0.0.2"],"conditions":{}}],
		"ports":[{"name":"http","protocol":"TCP","port":8080,"appProtocol":null},{"name":null,"port":null}]}`},
	{"Node", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","labels":{"topology.kubernetes.io/zone":"z1"}},
		"spec":{"podCIDR":"10.244.0.0/24","podCIDRs":["10.244.0.0/24"],"providerID":"x","taints":[{"key":"k","effect":"NoSchedule","timeAdded":null}]},
		"status":{"addresses":[{"type":"InternalIP","address":"192.168.1.10"}],"capacity":{"cpu":"2","memory":"4Gi","pods":110},
		"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-01-02T03:04:05Z","lastTransitionTime":null}],
		"nodeInfo":{"kubeletVersion":"v1.37.2"}}}`},
	{"ServiceCIDR", `{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"kubernetes"},"spec":{"cidrs":["10.96.0.0/12"]},
		"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"","message":""}]}}`},
	{"Service", `{"metadata":null,"spec":{"ports":[null,{"port":80,"targetPort":null}],"selector":null,"clusterIPs":[null]},"status":{}}`},
	{"Service", `{"metadata":{"name":"a","name":"b"}}`},
	{"Service", `{"metadata":{"Name":"a"},"Spec":{}}`},
	{"Service", `{"metadata":{"n\u0061me":"a"},"spec":{"ports":[{"port":1.0}]}}`},
	{"Service", `{"spec":{"ports":[{"port":"80","targetPort":"080"}],"sessionAffinityConfig":{"clientIP":{"timeoutSeconds":2147483648}}}}`},
	{"EndpointSlice", `{"endpoints":[{"addresses":null,"conditions":{"ready":null}}],"ports":[{"port":65536}]}`},
	{"Node", `{"status":{"capacity":{"cpu":"1.5","memory":"1e3","x":""},"allocatable":{"cpu":null}},"metadata":{"creationTimestamp":""}}`},
	{"Node", `{"metadata":{"labels":{"a":"1","a":"2"}},"status":{"addresses":[{"type":"InternalIP","address":"1.2.3.4","extra":1}]}}`},
}

// FuzzUnmarshalStrict holds the decoder's fast path to sigs.k8s.io/json:
// whatever encoding/json/v2 decodes without an error, sigs.k8s.io/json
// decodes strictly without an error or a strict warning, to the same
// object.
func FuzzUnmarshalStrict(f *testing.F) {
	kinds := []string{"Node", "Service", "EndpointSlice", "ServiceCIDR"}
	for _, s := range unmarshalSeeds {
		for i, k := range kinds {
			if k == s.kind {
				f.Add(uint8(i), []byte(s.raw))
			}
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, raw []byte) {
		k := kinds[int(kind)%len(kinds)]
		fast, ok := unmarshalV2(k, raw)
		if !ok {
			return
		}
		slow := newObject(k)
		strictErrs, err := kjson.UnmarshalStrict(raw, slow)
		if err != nil || len(strictErrs) > 0 {
			t.Fatalf("%s %s: v2 decodes it, sigs.k8s.io/json says %v, %v", k, raw, err, strictErrs)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s %s: the decoders differ (-v1 +v2):\n%s", k, raw, cmp.Diff(slow, fast))
		}
	})
}

// The fast path and sigs.k8s.io/json agree on every seed, including the
// ones only one of them decodes.
func TestUnmarshalStrictSeeds(t *testing.T) {
	for _, s := range unmarshalSeeds {
		got, gotStrict, gotErr := unmarshalStrict(s.kind, []byte(s.raw))
		want := newObject(s.kind)
		wantStrict, wantErr := kjson.UnmarshalStrict([]byte(s.raw), want)
		if (gotErr == nil) != (wantErr == nil) || len(gotStrict) != len(wantStrict) {
			t.Errorf("%s: got %v, %v; want %v, %v", s.raw, gotErr, gotStrict, wantErr, wantStrict)
			continue
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: (-want +got):\n%s", s.raw, cmp.Diff(want, got))
		}
	}
}

// TestPresizeEndpoints: the decoder's fast path reads an EndpointSlice's
// endpoints into a list of their number, whatever the spacing around
// them, and leaves an empty or null list as v2 reads it.
func TestPresizeEndpoints(t *testing.T) {
	for _, tc := range []struct {
		members string
		want    int // the list's length and capacity; -1: nil
	}{
		{`"endpoints":[{"addresses":["10.0.0.1"]},{"addresses":["10.0.0.2"]},{"addresses":["10.0.0.3"]}]`, 3},
		{"\"endpoints\" :\n\t[ {\"addresses\":[\"10.0.0.1\"]} , {\"addresses\":[\"10.0.0.2\"]} ]", 2},
		{`"endpoints":[]`, 0},
		{`"endpoints":null`, -1},
	} {
		raw := `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},"addressType":"IPv4",` + tc.members + `}`
		obj, ok := unmarshalV2("EndpointSlice", []byte(raw))
		if !ok {
			t.Fatalf("%s: not decoded", tc.members)
		}
		eps := obj.(*discoveryv1.EndpointSlice).Endpoints
		switch {
		case tc.want < 0 && eps != nil:
			t.Errorf("%s: endpoints %v, want nil", tc.members, eps)
		case tc.want >= 0 && (len(eps) != tc.want || cap(eps) != tc.want):
			t.Errorf("%s: %d endpoints in a list of capacity %d, want %d", tc.members, len(eps), cap(eps), tc.want)
		}
	}
}
