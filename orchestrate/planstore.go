package orchestrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/planning"
)

// Store is where plan records live: the plans feature's buckets (core.Kernel.Buckets).
// Get of a missing key returns an error matching wire.ErrNotFound.
type Store = core.Buckets

// PlansBucket is the bucket plan records live in, keyed by plan name.
const PlansBucket = "plans"

// planRecordVersion is the envelope version this build writes and reads.
const planRecordVersion = 1

type planEnvelope struct {
	V    int     `json:"v"`
	Plan *Record `json:"plan"`
}

// ErrPlanExists is returned by Create for a name that is taken.
var ErrPlanExists = errors.New("plan exists")

// Plans keeps plan records in a Store. Its methods are safe for concurrent use; Apply
// reads, steps and writes a record under one lock, so two requests on the same plan
// never interleave (only the server process opens the store).
type Plans struct {
	st Store
	mu sync.Mutex
}

// NewPlans returns plan records kept in st.
func NewPlans(st Store) *Plans { return &Plans{st: st} }

// Create stores a new record; a taken name is ErrPlanExists.
func (ps *Plans) Create(ctx context.Context, r Record) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old, err := ps.get(ctx, r.Name)
	if err == nil {
		return fmt.Errorf("plan %s exists (%s, %s): pick another name: %w", r.Name, old.State, old.File, ErrPlanExists)
	}
	if !errors.Is(err, wire.ErrNotFound) {
		return err
	}
	return ps.put(ctx, r)
}

// Get returns the record of plan name; a missing one matches wire.ErrNotFound.
func (ps *Plans) Get(ctx context.Context, name string) (Record, error) {
	return ps.get(ctx, name)
}

// List returns every plan record in name order.
func (ps *Plans) List(ctx context.Context) ([]Record, error) {
	var out []Record
	var decodeErr error
	err := ps.st.Scan(ctx, PlansBucket, func(key string, value []byte) bool {
		r, err := decodeRecord(key, value)
		if err != nil {
			decodeErr = err
			return false
		}
		out = append(out, r)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	return out, decodeErr
}

// Apply steps plan name with in and stores the result before returning it, so the
// caller performs the actions only once the new state is durable. A message for the
// lead is also kept in the record (Pending) until the caller clears it.
func (ps *Plans) Apply(ctx context.Context, name string, in Input, now time.Time) (Record, []Action, error) {
	return ps.Change(ctx, name, func(r Record) (Record, []Action, error) { return Step(r, in, now) })
}

// Change is Apply with the step given as a function of the stored record, for a
// caller that decides from the record (is this turn end new?) under the same lock.
// An error from fn leaves the record as it was and is returned with it.
func (ps *Plans) Change(ctx context.Context, name string, fn func(Record) (Record, []Action, error)) (Record, []Action, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r, err := ps.get(ctx, name)
	if err != nil {
		return Record{}, nil, err
	}
	next, actions, err := fn(r)
	if err != nil {
		return r, nil, err
	}
	for _, a := range actions {
		if a.Kind == ActSendLead {
			next.Pending = a.Text // the send's intent is stored with the step
		}
	}
	next.Name = name
	if reflect.DeepEqual(r, next) {
		return next, actions, nil // nothing changed: no write
	}
	if err := ps.put(ctx, next); err != nil {
		return r, nil, err
	}
	return next, actions, nil
}

// Update changes plan name's record with fn (e.g. to note the lead's agent id) and
// stores it.
func (ps *Plans) Update(ctx context.Context, name string, fn func(*Record)) (Record, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r, err := ps.get(ctx, name)
	if err != nil {
		return Record{}, err
	}
	fn(&r)
	r.Name = name // the key and the record must agree
	return r, ps.put(ctx, r)
}

// Delete removes plan name's record (the plan file stays).
func (ps *Plans) Delete(ctx context.Context, name string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if err := ps.st.Delete(ctx, PlansBucket, name); err != nil {
		return fmt.Errorf("delete plan %s: %w", name, err)
	}
	return nil
}

func (ps *Plans) get(ctx context.Context, name string) (Record, error) {
	b, err := ps.st.Get(ctx, PlansBucket, name)
	if errors.Is(err, wire.ErrNotFound) {
		return Record{}, wire.Errorf(wire.CodeNotFound, "no plan named %s (see `orcr plan ls`)", name)
	}
	if err != nil {
		return Record{}, fmt.Errorf("get plan %s: %w", name, err)
	}
	return decodeRecord(name, b)
}

func (ps *Plans) put(ctx context.Context, r Record) error {
	if err := planning.ValidPlanName(r.Name); err != nil {
		return err
	}
	b, err := json.Marshal(planEnvelope{V: planRecordVersion, Plan: &r})
	if err != nil {
		return fmt.Errorf("encode plan %s: %w", r.Name, err)
	}
	if err := ps.st.Put(ctx, PlansBucket, r.Name, b); err != nil {
		return fmt.Errorf("store plan %s: %w", r.Name, err)
	}
	return nil
}

func decodeRecord(key string, b []byte) (Record, error) {
	var env planEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return Record{}, fmt.Errorf("decode plan %s: %w", key, err)
	}
	if env.V != planRecordVersion || env.Plan == nil {
		return Record{}, fmt.Errorf("plan %s: record version %d, this orcr reads version %d: upgrade orcr", key, env.V, planRecordVersion)
	}
	return *env.Plan, nil
}
