package listen

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ParsePeriod reads the spellings a listener file may use for a length of time: Go
// durations ("30s", "90m", "1h30m"), with days and weeks added ("2d", "1w", "1d12h"),
// and words with an optional count ("day", "hour", "2 hours", "1 week"). Anything
// else, and anything not positive, is refused with the spellings that work.
func ParsePeriod(s string) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, periodErr(s)
	}
	if d, ok := wordPeriod(t); ok {
		return d, nil
	}
	d, ok := unitPeriod(t)
	if !ok || d <= 0 {
		return 0, periodErr(s)
	}
	return d, nil
}

func periodErr(s string) error {
	return fmt.Errorf("%q is not a period: use e.g. \"30s\", \"90m\", \"1h\", \"2d\", \"day\" or \"2 hours\"", s)
}

var words = map[string]time.Duration{
	"second": time.Second, "minute": time.Minute, "hour": time.Hour,
	"day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
}

// wordPeriod reads "day", "2 days", "1 hour".
func wordPeriod(t string) (time.Duration, bool) {
	n := int64(1)
	unit := t
	if num, rest, ok := strings.Cut(t, " "); ok {
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || v <= 0 || v > 10000 {
			return 0, false
		}
		n, unit = v, strings.TrimSpace(rest)
	}
	if n != 1 || strings.HasSuffix(unit, "s") {
		unit = strings.TrimSuffix(unit, "s")
	}
	d, ok := words[unit]
	if !ok {
		return 0, false
	}
	return time.Duration(n) * d, true
}

// unitPeriod reads Go duration syntax plus d (24h) and w (7d) units.
func unitPeriod(t string) (time.Duration, bool) {
	var total time.Duration
	for t != "" {
		i := 0
		for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, false
		}
		num := t[:i]
		t = t[i:]
		j := 0
		for j < len(t) && unicode.IsLetter(rune(t[j])) {
			j++
		}
		unit := t[:j]
		t = t[j:]
		var d time.Duration
		switch unit {
		case "d", "w":
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, false
			}
			day := 24 * float64(time.Hour)
			if unit == "w" {
				day *= 7
			}
			if v*day > float64(1<<62) {
				return 0, false
			}
			d = time.Duration(v * day)
		case "":
			return 0, false // "90" alone is ambiguous
		default:
			var err error
			if d, err = time.ParseDuration(num + unit); err != nil {
				return 0, false
			}
		}
		total += d
	}
	return total, true
}

// FormatPeriod writes d the short way a person reads it back: "1h", "90m", "1d".
func FormatPeriod(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}
