package dlq

import (
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/reference/job"
)

// Encode writes an entry as the stores keep it: JSON with its version. Redis
// scripts treat these bytes as opaque.
func Encode(e Entry) ([]byte, error) {
	e.Version = EncodingVersion
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode dlq entry %q: %w", e.Job.ID, err)
	}
	return b, nil
}

// Decode reads stored bytes back. It never fails: bytes that are not an
// entry of a version this code knows come back as a Corrupt entry carrying
// them, with id (the key they were stored under) as its job ID, so that a
// listing shows them instead of dropping them or crashing.
func Decode(id string, b []byte) Entry {
	var e Entry
	err := json.Unmarshal(b, &e)
	switch {
	case err != nil:
	case e.Version > EncodingVersion:
		err = fmt.Errorf("entry version %d is newer than this faultline's %d", e.Version, EncodingVersion)
	case e.Version < 1:
		err = fmt.Errorf("entry has no version")
	case e.Job.ID != id:
		err = fmt.Errorf("entry is for job %q, stored as %q", e.Job.ID, id)
	}
	if err != nil {
		return Entry{Job: jobWithID(id), Corrupt: true, Raw: append([]byte(nil), b...), DecodeError: err.Error()}
	}
	return e
}

func jobWithID(id string) job.Job { return job.Job{ID: id} }
