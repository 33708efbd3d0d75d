package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"orcr/core/wire"
	schedapi "orcr/schedule/api"
)

// maxEvery bounds --every: past it time.Duration would overflow (18446744075 s wrapped to a
// 1.29 s cadence), and a cadence longer than a year is a date, which --cron says better.
const maxEvery = 366 * 24 * time.Hour

// checkScheduleAdd refuses schedule.add input that would misfire rather than fail: a cron that
// matches no date (robfig/cron's Next answers the zero time, which is always due, so it fired
// ~680 times a second), an --every past maxEvery, and env names agent.run refuses.
// It runs before ScheduleAdd's own checks, so an overflowing --every is named as such rather
// than wrapped into a value they accept.
func checkScheduleAdd(p schedapi.ScheduleAddParams, now time.Time) error {
	var spec cron.Schedule
	if p.Cron != "" {
		var err error
		if spec, err = parseCron(p.Cron); err != nil {
			return err
		}
	}
	if err := checkCadence(p.Cron, p.EverySeconds, spec, now); err != nil {
		return err
	}
	for k := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return wire.Errorf(wire.CodeInvalidParams, "invalid env name %q: use --env KEY=VALUE", k)
		}
	}
	return nil
}

// checkCadence is the part of checkScheduleAdd a stored schedule is held to at load.
func checkCadence(expr string, everySeconds int, spec cron.Schedule, now time.Time) error {
	if spec != nil {
		// robfig/cron rounds "@every 0s" up to a second: it fired every second. The
		// descriptor is held to --every's minimum instead.
		if d, ok := strings.CutPrefix(strings.TrimSpace(expr), "@every "); ok {
			if every, err := time.ParseDuration(strings.TrimSpace(d)); err == nil && every < minEvery {
				return wire.Errorf(wire.CodeInvalidParams, "cron %q is shorter than the %s minimum: use @every %s or longer", expr, minEvery, minEvery)
			}
		}
		if spec.Next(now.Local()).IsZero() {
			return wire.Errorf(wire.CodeInvalidParams,
				"cron %q never fires: no date in the next 5 years matches it (e.g. day 31 of a 30-day month); check the day-of-month and month fields", expr)
		}
		return nil
	}
	if everySeconds > int(maxEvery/time.Second) {
		return wire.Errorf(wire.CodeInvalidParams,
			"--every %ds is too long; the limit is %d s (366 days): use --cron for a yearly date", everySeconds, int(maxEvery/time.Second))
	}
	return nil
}

// disableIfNeverDue keeps a stored schedule that cannot fire (stored before these checks) listed
// and removable but never due: a nil NextAt is skipped by the loop.
func (s *Service) disableIfNeverDue(rt *schedRT, now time.Time) bool {
	sc := rt.rec.Schedule
	err := checkCadence(sc.Cron, sc.EverySeconds, rt.spec, now)
	if err == nil && (rt.spec != nil || sc.EverySeconds > 0) {
		return false
	}
	if err == nil {
		err = fmt.Errorf("no cadence")
	}
	s.log.Error("stored schedule can never be due; it is kept but not run — remove it with orcr schedule rm",
		"name", sc.Name, "err", err)
	rt.rec.Schedule.NextAt = nil
	s.byName[sc.Name] = rt
	return true
}
