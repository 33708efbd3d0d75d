package core

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Default admission caps (DESIGN §7: "safe at scale"). Out of the box the queue had no cap
// and no memory guard: a listener firing 10,500 `true` agents left 9,066 records starting,
// 6,725 tmux windows and the server at 67 % CPU. The defaults are derived from the
// machine's memory and each provider's footprint, and every cap carries where its value
// came from, which `orcr queue` and `orcr doctor` show. A value in [limits] (or set with
// `orcr queue caps`) wins, 0 included: 0 still means unlimited when a user writes it.

// Footprint is what one agent of a provider is taken to hold in memory, in MB, to derive
// its default cap. Measured here (resident size of the pane's process tree, the pinned
// CLIs idle at their first screen): claude 153 MB, codex 324 MB (5 processes), opencode
// 732 MB (2), pi 151 MB. A working session holds more (its context, tool output, the
// programs it runs), so the figures are rounded up: claude 500, codex 400, opencode 800,
// pi 200. They only set defaults; a fleet that knows better sets [limits]. A provider
// absent here (shell, any program) gets no cap of its own: the global cap and the memory
// guard bound it.
var Footprint = map[string]int{
	"claude":   500,
	"codex":    400,
	"opencode": 800,
	"pi":       200,
}

// The default caps are memory ÷ footprint, clamped to these: at least a few agents on a
// small machine (the memory guard still holds them when memory runs out), and never so
// many that one burst piles hundreds of panes onto the host.
const (
	// globalFootprintMB is the footprint the global cap assumes of an agent whatever its
	// provider: a typical TUI agent (a mixed fleet of claude, codex and shell programs).
	globalFootprintMB        = 300
	globalFloor, globalCeil  = 4, 64
	providerFloor, provCeil  = 2, 64
	minFreeFloor, minFreeCap = 256, 2048 // MB
	minFreePercent           = 5         // of MemTotal
	assumedMemMB             = 8 << 10   // when /proc/meminfo cannot be read
)

// Origins of a cap's value, as `orcr queue` shows them.
const (
	OriginConfig  = "config"
	OriginRuntime = "runtime: orcr queue caps"
)

// DefaultLimits are the caps a machine with memTotalMB of memory gets when the config sets
// none (memTotalMB ≤ 0: unknown, 8 GiB assumed). Each value's origin says how it was
// derived, e.g. "default: 23.5 GiB ÷ 500 MB".
func DefaultLimits(memTotalMB int) Limits {
	mem := fmt.Sprintf("%.1f GiB", float64(memTotalMB)/1024)
	if memTotalMB <= 0 {
		memTotalMB, mem = assumedMemMB, "memory unknown, 8 GiB assumed"
	}
	l := Limits{Provider: map[string]int{}, Origin: map[string]string{}, Aging: DefaultAging}
	l.Global = clamp(memTotalMB/globalFootprintMB, globalFloor, globalCeil)
	l.Origin[CapGlobal] = fmt.Sprintf("default: %s ÷ %d MB, within [%d, %d]", mem, globalFootprintMB, globalFloor, globalCeil)
	for p, fp := range Footprint {
		l.Provider[p] = clamp(memTotalMB/fp, providerFloor, provCeil)
		l.Origin[p] = fmt.Sprintf("default: %s ÷ %d MB, within [%d, %d]", mem, fp, providerFloor, provCeil)
	}
	l.MinFreeMB = clamp(memTotalMB*minFreePercent/100, minFreeFloor, minFreeCap)
	l.Origin[CapMinFree] = fmt.Sprintf("default: %d%% of %s, within [%d, %d] MB", minFreePercent, mem, minFreeFloor, minFreeCap)
	return l
}

// Names of the caps that are not a provider's, as keys of Limits.Origin.
const (
	CapGlobal  = "global"
	CapMinFree = "min_free_mb"
)

// Override sets the caps that set holds (config [limits], by the same names: global,
// min_free_mb, a provider) over l, marking each with origin. A provider set to 0 has no
// cap.
func (l Limits) Override(set map[string]int, origin string) Limits {
	l = cloneLimits(l)
	for k, v := range set {
		switch k {
		case CapGlobal:
			l.Global = v
		case CapMinFree:
			l.MinFreeMB = v
		default:
			if v == 0 {
				delete(l.Provider, k)
			} else {
				l.Provider[k] = v
			}
		}
		l.Origin[k] = origin
	}
	return l
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// MemTotalMB reads MemTotal from /proc/meminfo (-1 when unknown).
func MemTotalMB() int { return meminfoMB("MemTotal:") }

// meminfoMB reads one field of /proc/meminfo in MB (-1 when unknown). $ORCR_MEMINFO
// names another file in its format: what a test gives a coordinator and its nodes, all
// on one machine, to tell their memory apart (nodes' placement).
func meminfoMB(field string) int {
	path := "/proc/meminfo"
	if p := os.Getenv("ORCR_MEMINFO"); p != "" {
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.Atoi(f[1])
				return kb / 1024
			}
		}
	}
	return -1
}
