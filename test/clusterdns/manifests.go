package clusterdns

import "fmt"

// corefile is kubeadm's Corefile for the domain cluster.local, plugin for
// plugin and in the same order (cmd/kubeadm/app/phases/addons/dns of
// Kubernetes v1.37). forward sends names outside the cluster to the
// node's resolv.conf, which in the lab names an address where no DNS
// server listens (test/kubeletlab's nodeResolvConf): they fail fast, and
// loop, whose probe goes the same way and never returns to CoreDNS, finds
// no loop and stays quiet.
const corefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`

// rbac is the ServiceAccount coredns and what it may read: kubeadm's
// ClusterRole system:coredns and its binding.
const rbac = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
- kind: ServiceAccount
  name: coredns
  namespace: kube-system
`

// service is kubeadm's kube-dns Service at ServiceIP.
const service = `apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
    kubernetes.io/cluster-service: "true"
    kubernetes.io/name: CoreDNS
  annotations:
    prometheus.io/port: "9153"
    prometheus.io/scrape: "true"
spec:
  clusterIP: %s
  selector:
    k8s-app: kube-dns
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
  - {name: metrics, port: 9153, protocol: TCP, targetPort: 9153}
`

// manifests returns everything Deploy applies: kubeadm's CoreDNS objects,
// written for the lab.
func manifests() string {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: coredns\n  namespace: kube-system\ndata:\n  Corefile: |\n"
	for _, line := range splitLines(corefile) {
		cm += "    " + line + "\n"
	}
	return rbac + "---\n" + cm + "---\n" + fmt.Sprintf(deployment, ImageRef) + "---\n" + fmt.Sprintf(service, ServiceIP)
}
