package run

import (
	"context"
	"encoding/json"
	"fmt"
)

// GitProcs is how many git processes the package started so far.
func GitProcs() int64 { return gitProcs.Load() }

// append writes log entry e of run name as the log would, and nothing else: what a
// server killed between a log append and its record write leaves. A Runs that has
// the run in memory does not see it; a restarted one (NewRuns) replays it.
func (rs *Runs) append(ctx context.Context, name string, e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return rs.st.Put(ctx, logPrefix+name, fmt.Sprintf("%020d", e.Seq), b)
}

// SetBeforeRecordCoder sets the hook between a brief's spawn and its record (nil: none).
func SetBeforeRecordCoder(fn func(who string)) { beforeRecordCoder = fn }

// BriefWaits is how many coder calls waited for the brief that started them.
func BriefWaits() int64 { return briefWaits.Load() }
