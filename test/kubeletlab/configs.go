package kubeletlab

import (
	"fmt"
)

// containerdSocket is containerd's CRI endpoint, in the private /run.
const containerdSocket = "/run/containerd/containerd.sock"

// containerdConfig is containerd's configuration: its standard paths
// (private to the node's mount namespace), the pause image the test
// imports as the sandbox image (no registry is reachable), runc from the
// system, the CNI plugins of the system and pod network namespaces under
// containerd's state directory. restrict_oom_score_adj: this machine's
// root lacks CAP_SYS_RESOURCE, so runc cannot lower a container's
// oom_score_adj below containerd's; kubelet asks -998 for every sandbox
// ("failed to update /proc/self/oom_score_adj: Permission denied").
func containerdConfig(sandboxImage string) string {
	return fmt.Sprintf(`version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = %q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = %q

[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  restrict_oom_score_adj = true

[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = %q

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = "/usr/sbin/runc"
  SystemdCgroup = false
`, containerdSocket, sandboxImage, cniConfDir)
}

// cniConfig is the pod network: a bridge cni0 on the node, gateway of the
// node's pod range podCIDR, whose addresses host-local hands out, with
// hairpin mode so that a pod reaches itself through a Service; and the
// portmap plugin for pods' hostPorts, as kind and most CNI set-ups chain
// it (Kubernetes' HostPort conformance test needs it). Its iptables rules
// (CNI-HOSTPORT-*) sit beside the proxy's, which must leave them alone.
func cniConfig(podCIDR string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kubeletlab",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
`, podCIDR)
}

// kubeletConfig is kubelet's configuration for this machine: cgroup v1
// (failCgroupV1: false; Kubernetes 1.37 refuses v1 by default), the
// cgroupfs driver, no QoS cgroup hierarchy or node allocatable
// enforcement (the test's process does not own the cgroup roots), no swap
// check, eviction thresholds that a shared disk does not trip, and an
// open kubelet API (kube-apiserver has no client certificate for it, for
// logs and exec): it listens only on the node's address, inside the lab.
func kubeletConfig(resolvConf, address string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
resolvConf: %s
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: true
syncFrequency: 5s
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 5s
serializeImagePulls: false
`, containerdSocket, address, resolvConf)
}
