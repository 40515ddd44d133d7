"""kube room."""
