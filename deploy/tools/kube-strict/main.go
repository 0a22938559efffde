// kube-strict decodes Kubernetes manifests into the API's own Go types the way the API server does with
// strict field validation: an unknown field (a misspelt key) or a wrongly typed value is an error. It reads a
// JSON array of manifests on stdin and prints a JSON report: the problems, and the kinds it has no type for.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsjson "sigs.k8s.io/json"
)

var types = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/Ingress":            func() any { return &networkingv1.Ingress{} },
	"gateway.networking.k8s.io/v1/HTTPRoute":  func() any { return &gatewayv1.HTTPRoute{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"networking.k8s.io/v1/NetworkPolicy":     func() any { return &networkingv1.NetworkPolicy{} },
}

type report struct {
	Problems  []string `json:"problems"`
	Unchecked []string `json:"unchecked"`
}

func main() {
	var manifests []json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&manifests); err != nil {
		fmt.Fprintln(os.Stderr, "kube-strict: stdin is not a JSON array of manifests:", err)
		os.Exit(2)
	}
	out := report{Problems: []string{}, Unchecked: []string{}}
	for _, raw := range manifests {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			out.Problems = append(out.Problems, err.Error())
			continue
		}
		where := meta.Kind + " " + meta.Metadata.Name
		newObject, known := types[meta.APIVersion+"/"+meta.Kind]
		if !known {
			out.Unchecked = append(out.Unchecked, meta.APIVersion+"/"+meta.Kind)
			continue
		}
		strict, err := sigsjson.UnmarshalStrict(raw, newObject())
		if err != nil {
			out.Problems = append(out.Problems, where+": "+err.Error())
		}
		for _, e := range strict {
			out.Problems = append(out.Problems, where+": "+e.Error())
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(2)
	}
}
