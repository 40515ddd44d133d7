"""realcluster room: the real Kubernetes components, run as child processes for tests and benchmarks.

- ``apiserver``: kube-apiserver with etcd and kube-controller-manager on loopback (envtest's layout);
- ``volcano``: the real Volcano beside it, as its own chart installs it;
- ``onenode``: a one-node cluster (kubelet, containerd, kube-proxy, CoreDNS, Volcano) in a network
  namespace of its own, reached from the host through a loopback port.

The sandbox builds on this room (ports, kubeconfigs, CRDs, kubectl lookup); this room never
imports the sandbox.
"""
