// Command gowebhook is the anchor of bench/webhook.py: the pod mutation tfgang's webhook makes,
// written as a Go engineer would with the standard library alone (net/http, crypto/tls,
// encoding/json), so that tfgang is compared with what a compiled webhook costs on the same core,
// minus any framework.
//
// For each POST /mutate-pods it decodes the whole AdmissionReview, looks the pod's TFJob up in
// memory (loaded from -jobs at start, as tfgang's cache holds them), checks that the TFJob is the
// pod's controller, and answers with a base64 JSON patch that adds TF_CONFIG to the first
// container named "tensorflow", the annotations scheduling.k8s.io/group-name and
// volcano.sh/task-spec, and schedulerName "volcano" when the replica template names none.
package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	labelJobName      = "training.kubeflow.org/job-name"
	labelReplicaType  = "training.kubeflow.org/replica-type"
	labelReplicaIndex = "training.kubeflow.org/replica-index"
	defaultPort       = 2222
	gangScheduler     = "volcano"
	maxBody           = 4 << 20
)

// The parts of a TFJob the mutation reads.
type container struct {
	Name  string `json:"name"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
}

type replica struct {
	Replicas *int `json:"replicas"`
	Template struct {
		Spec struct {
			Containers    []container `json:"containers"`
			SchedulerName string      `json:"schedulerName"`
		} `json:"spec"`
	} `json:"template"`
}

type tfJob struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		TFReplicaSpecs map[string]replica `json:"tfReplicaSpecs"`
	} `json:"spec"`
}

// A job's replica types, lower-cased and sorted, with what TF_CONFIG and the patch need of each.
type replicaInfo struct {
	key           string // as spelled in the job
	lower         string
	count         int
	port          int
	schedulerName string
}

type jobEntry struct {
	job      tfJob
	replicas []replicaInfo
}

func newEntry(job tfJob) *jobEntry {
	entry := &jobEntry{job: job}
	for key, spec := range job.Spec.TFReplicaSpecs {
		info := replicaInfo{key: key, lower: strings.ToLower(key), count: 1, port: defaultPort,
			schedulerName: spec.Template.Spec.SchedulerName}
		if spec.Replicas != nil {
			info.count = *spec.Replicas
		}
		for _, c := range spec.Template.Spec.Containers {
			if c.Name != "tensorflow" {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == "tfjob-port" {
					info.port = p.ContainerPort
				}
			}
		}
		entry.replicas = append(entry.replicas, info)
	}
	sort.Slice(entry.replicas, func(a, b int) bool { return entry.replicas[a].lower < entry.replicas[b].lower })
	return entry
}

func (e *jobEntry) replica(label string) *replicaInfo {
	for i := range e.replicas {
		if e.replicas[i].lower == strings.ToLower(label) {
			return &e.replicas[i]
		}
	}
	return nil
}

// tfConfig is the TF_CONFIG of one replica, computed on every call.
func (e *jobEntry) tfConfig(rtype string, index int) string {
	cluster := make(map[string][]string, len(e.replicas))
	for _, r := range e.replicas {
		hosts := make([]string, r.count)
		for i := range hosts {
			hosts[i] = e.job.Metadata.Name + "-" + r.lower + "-" + strconv.Itoa(i) + "." +
				e.job.Metadata.Namespace + ".svc:" + strconv.Itoa(r.port)
		}
		cluster[r.lower] = hosts
	}
	value := struct {
		Cluster map[string][]string `json:"cluster"`
		Task    struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		} `json:"task"`
		Environment string `json:"environment"`
	}{Cluster: cluster, Environment: "cloud"}
	value.Task.Type = strings.ToLower(rtype)
	value.Task.Index = index
	encoded, _ := json.Marshal(value) // maps are encoded with sorted keys
	return string(encoded)
}

type operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

type webhook struct {
	jobs map[string]*jobEntry // "namespace/name"
}

func pointerEscape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func fail(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	body, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"message": message, "code": code})
	w.Write(body)
}

func (h *webhook) mutatePods(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		fail(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	var review map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&review); err != nil {
		fail(w, http.StatusBadRequest, "the body is not an AdmissionReview: "+err.Error())
		return
	}
	request, _ := review["request"].(map[string]any)
	if request == nil {
		fail(w, http.StatusBadRequest, "no request in the review")
		return
	}
	response := map[string]any{"uid": request["uid"], "allowed": true}
	if patch, denial := h.mutate(request); denial != "" {
		response["allowed"] = false
		response["status"] = map[string]any{"code": 403, "message": denial}
	} else if len(patch) > 0 {
		encoded, _ := json.Marshal(patch)
		response["patchType"] = "JSONPatch"
		response["patch"] = base64.StdEncoding.EncodeToString(encoded)
	}
	answer, _ := json.Marshal(map[string]any{
		"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response})
	w.Header().Set("Content-Type", "application/json")
	w.Write(answer)
}

// mutate returns the patch for the pod of a CREATE review, or why it is denied.
func (h *webhook) mutate(request map[string]any) ([]operation, string) {
	if request["operation"] != "CREATE" {
		return nil, ""
	}
	pod, _ := request["object"].(map[string]any)
	metadata, _ := pod["metadata"].(map[string]any)
	labels, _ := metadata["labels"].(map[string]any)
	jobName, _ := labels[labelJobName].(string)
	if jobName == "" {
		return nil, ""
	}
	namespace, _ := request["namespace"].(string)
	entry := h.jobs[namespace+"/"+jobName]
	if entry == nil {
		return nil, "TFJob " + namespace + "/" + jobName + " does not exist"
	}
	if !controlledBy(metadata, entry.job) {
		return nil, ""
	}
	typeLabel, _ := labels[labelReplicaType].(string)
	info := entry.replica(typeLabel)
	if info == nil {
		return nil, "replica type " + strconv.Quote(typeLabel) + " is not in the TFJob"
	}
	indexLabel, _ := labels[labelReplicaIndex].(string)
	index, err := strconv.Atoi(indexLabel)
	if err != nil || index < 0 || index >= info.count {
		return nil, "bad replica index " + strconv.Quote(indexLabel)
	}
	spec, _ := pod["spec"].(map[string]any)
	containers, _ := spec["containers"].([]any)
	var patch []operation
	for position, item := range containers {
		c, _ := item.(map[string]any)
		if c["name"] != "tensorflow" {
			continue
		}
		env := map[string]any{"name": "TF_CONFIG", "value": entry.tfConfig(info.key, index)}
		base := "/spec/containers/" + strconv.Itoa(position) + "/env"
		if _, has := c["env"].([]any); has {
			patch = append(patch, operation{"add", base + "/-", env})
		} else {
			patch = append(patch, operation{"add", base, []any{env}})
		}
		break
	}
	marks := map[string]string{"scheduling.k8s.io/group-name": jobName, "volcano.sh/task-spec": info.lower}
	if annotations, has := metadata["annotations"].(map[string]any); has {
		for _, key := range []string{"scheduling.k8s.io/group-name", "volcano.sh/task-spec"} {
			if annotations[key] != marks[key] {
				patch = append(patch, operation{"add", "/metadata/annotations/" + pointerEscape(key), marks[key]})
			}
		}
	} else {
		patch = append(patch, operation{"add", "/metadata/annotations", marks})
	}
	if info.schedulerName == "" && spec["schedulerName"] != gangScheduler {
		patch = append(patch, operation{"add", "/spec/schedulerName", gangScheduler})
	}
	return patch, ""
}

func controlledBy(metadata map[string]any, job tfJob) bool {
	owners, _ := metadata["ownerReferences"].([]any)
	for _, item := range owners {
		owner, _ := item.(map[string]any)
		if owner["controller"] == true {
			return owner["kind"] == "TFJob" && owner["name"] == job.Metadata.Name &&
				(job.Metadata.UID == "" || owner["uid"] == job.Metadata.UID)
		}
	}
	return false
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9444", "address to serve HTTPS on")
	certFile := flag.String("cert", "tls.crt", "serving certificate (PEM)")
	keyFile := flag.String("key", "tls.key", "its private key (PEM)")
	jobsFile := flag.String("jobs", "jobs.json", "JSON list of the TFJobs to hold in memory")
	flag.Parse()

	raw, err := os.ReadFile(*jobsFile)
	if err != nil {
		log.Fatal(err)
	}
	var list []tfJob
	if err := json.Unmarshal(raw, &list); err != nil {
		log.Fatal(err)
	}
	h := &webhook{jobs: make(map[string]*jobEntry, len(list))}
	for _, job := range list {
		h.jobs[job.Metadata.Namespace+"/"+job.Metadata.Name] = newEntry(job)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/mutate-pods", h.mutatePods)
	server := &http.Server{
		Addr:              *addr,
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
	log.Fatal(server.ListenAndServeTLS(*certFile, *keyFile))
}
