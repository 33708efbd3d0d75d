package accounts

import (
	"strings"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// historyCursorSep joins a peak's fields in a usage.history cursor; no label holds it.
const historyCursorSep = "\t"

// historyCursor names a peak: its series (provider, account, window, family) and the
// instant of its peak.
func historyCursor(k acctapi.WindowPeak) string {
	return strings.Join([]string{k.Provider, k.Account, k.Window, k.Family, k.PeakAt.UTC().Format(time.RFC3339Nano)}, historyCursorSep)
}

// pageHistory cuts one page of at most limit peaks (0: all) from ks, which is in
// usage.history's order (series by series, newest first), starting after the cursor
// after. next names the page's last peak when more follow. Like agent.list's cursor it
// names a record rather than a position, so peaks recorded since (they go at the head
// of their series) do not shift the page. When that peak itself is gone (trimmed as the
// oldest of its series), the page goes on with its series' older peaks, which are gone
// too, so with the next series; when the whole series is gone the cursor is refused.
func pageHistory(ks []acctapi.WindowPeak, after string, limit int) ([]acctapi.WindowPeak, string, error) {
	if after != "" {
		f := strings.Split(after, historyCursorSep)
		if len(f) != 5 {
			return nil, "", wire.Errorf(wire.CodeInvalidParams, "usage.history: after %q is not a cursor this server gave; list again without it", after)
		}
		at, err := time.Parse(time.RFC3339Nano, f[4])
		if err != nil {
			return nil, "", wire.Errorf(wire.CodeInvalidParams, "usage.history: after %q is not a cursor this server gave; list again without it", after)
		}
		start, inSeries := -1, false
		for i, k := range ks {
			same := k.Provider == f[0] && k.Account == f[1] && k.Window == f[2] && k.Family == f[3]
			if same {
				inSeries = true
				if !k.PeakAt.Before(at) {
					continue
				}
			} else if !inSeries {
				continue
			}
			start = i
			break
		}
		if !inSeries {
			return nil, "", wire.Errorf(wire.CodeNotFound, "usage.history: the series of cursor %q is no longer kept; list again without after", after)
		}
		if start < 0 {
			start = len(ks)
		}
		ks = ks[start:]
	}
	if limit <= 0 || len(ks) <= limit {
		return ks, "", nil
	}
	ks = ks[:limit]
	return ks, historyCursor(ks[len(ks)-1]), nil
}
