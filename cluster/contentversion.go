package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// contentUID is the UID VersionByContent gives every object: the digest
// in resourceVersion identifies it alone.
const contentUID = "content"

// VersionByContent sets each Service's and EndpointSlice's UID and
// resourceVersion to a digest of the rest of the object, for a Builder
// given snapshots that no one API server versioned: two files of a
// cluster, one edited by hand in a pull request, where an object changed
// without a new resourceVersion. The Builder then reuses exactly what it
// built from objects of the same content, across the snapshots. Nodes
// are left alone: the Builder does not remember them.
func (s *Snapshot) VersionByContent() error {
	for i := range s.Services {
		if err := versionByContent(&s.Services[i].ObjectMeta, &s.Services[i]); err != nil {
			return err
		}
	}
	for i := range s.EndpointSlices {
		if err := versionByContent(&s.EndpointSlices[i].ObjectMeta, &s.EndpointSlices[i]); err != nil {
			return err
		}
	}
	return nil
}

// versionByContent digests obj, whose metadata is m, without its UID and
// resourceVersion, and sets them to the digest.
func versionByContent(m *metav1.ObjectMeta, obj any) error {
	m.UID, m.ResourceVersion = "", ""
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	m.UID, m.ResourceVersion = contentUID, hex.EncodeToString(sum[:])
	return nil
}
