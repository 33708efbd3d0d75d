package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"orcr/core/wire"
)

// Versions this build writes and reads (see the package comment).
const (
	schemaVersion = 2
	agentVersion  = 1
	eventVersion  = 1
)

var (
	prefixAgent  = []byte("a/")
	prefixEvent  = []byte("e/")
	prefixBucket = []byte("k/")
	keySeq       = []byte("m/seq")
	keySchema    = []byte("m/schema")
)

// ErrUnknownVersion matches every *VersionError with errors.Is.
var ErrUnknownVersion = errors.New("unknown record version")

// VersionError reports a record (or the store's schema) written in a version this build
// cannot read, usually by a newer orcr.
type VersionError struct {
	Key  string // the record's key, printable
	Got  int    // the version found; 0 when the record has none
	Want int    // the version this build reads
}

func (e *VersionError) Error() string {
	if e.Got == 0 {
		return fmt.Sprintf("store record %s has no version; the store is damaged or not orcr's", e.Key)
	}
	return fmt.Sprintf("store record %s has version %d but this orcr reads version %d; "+
		"it was written by a newer orcr — upgrade orcr to read it", e.Key, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrUnknownVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrUnknownVersion }

func agentKey(id string) []byte { return append(append([]byte(nil), prefixAgent...), id...) }

func eventKey(seq uint64) []byte {
	k := make([]byte, len(prefixEvent)+8)
	copy(k, prefixEvent)
	binary.BigEndian.PutUint64(k[len(prefixEvent):], seq)
	return k
}

func seqOfKey(k []byte) (uint64, bool) {
	if len(k) != len(prefixEvent)+8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[len(prefixEvent):]), true
}

func seqBytes(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

// bucketPrefix is "k/<bucket>/". The trailing slash and the ban on "/" in bucket names
// keep one bucket's scan from reaching into another whose name it prefixes.
func bucketPrefix(bucket string) ([]byte, error) {
	if bucket == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "store bucket name is empty")
	}
	if strings.Contains(bucket, "/") {
		return nil, wire.Errorf(wire.CodeInvalidParams, "store bucket %q contains \"/\"; use another separator", bucket)
	}
	p := make([]byte, 0, len(prefixBucket)+len(bucket)+1)
	p = append(p, prefixBucket...)
	p = append(p, bucket...)
	return append(p, '/'), nil
}

func bucketKey(bucket, key string) ([]byte, error) {
	p, err := bucketPrefix(bucket)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "store key in bucket %q is empty", bucket)
	}
	return append(p, key...), nil
}

type agentEnvelope struct {
	V     int         `json:"v"`
	Agent *wire.Agent `json:"agent"`
}

type eventEnvelope struct {
	V     int         `json:"v"`
	Event *wire.Event `json:"event"`
}

func encodeAgent(a *wire.Agent) ([]byte, error) {
	b, err := json.Marshal(agentEnvelope{V: agentVersion, Agent: a})
	if err != nil {
		return nil, fmt.Errorf("encode agent %s: %w", a.ID, err)
	}
	return b, nil
}

func encodeEvent(e *wire.Event) ([]byte, error) {
	b, err := json.Marshal(eventEnvelope{V: eventVersion, Event: e})
	if err != nil {
		return nil, fmt.Errorf("encode event %d: %w", e.Seq, err)
	}
	return b, nil
}

// decodeAgent decodes in one pass and checks the version afterwards; when a newer
// version fails to decode as this one, the version error wins over the JSON error.
func decodeAgent(key, val []byte, dst *wire.Agent) error {
	env := agentEnvelope{Agent: dst}
	err := json.Unmarshal(val, &env)
	return checkVersion(key, val, env.V, agentVersion, err)
}

func decodeEvent(key, val []byte, dst *wire.Event) error {
	env := eventEnvelope{Event: dst}
	err := json.Unmarshal(val, &env)
	return checkVersion(key, val, env.V, eventVersion, err)
}

func checkVersion(key, val []byte, got, want int, decodeErr error) error {
	if decodeErr != nil {
		var peek struct {
			V int `json:"v"`
		}
		if json.Unmarshal(val, &peek) == nil && peek.V > want {
			return &VersionError{Key: printKey(key), Got: peek.V, Want: want}
		}
		return fmt.Errorf("decode store record %s: %w", printKey(key), decodeErr)
	}
	if got != want {
		return &VersionError{Key: printKey(key), Got: got, Want: want}
	}
	return nil
}

// printKey renders a key for messages; event seqs are binary, so they are shown as numbers.
func printKey(k []byte) string {
	if seq, ok := seqOfKey(k); ok && string(k[:len(prefixEvent)]) == string(prefixEvent) {
		return fmt.Sprintf("e/%d", seq)
	}
	return string(k)
}
