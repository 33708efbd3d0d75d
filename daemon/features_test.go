package daemon

import (
	"go/build"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// featureRoots are the feature packages (DESIGN §5: each a room that plugs into the
// kernel); a package belongs to the feature whose root is the longest prefix of its
// import path.
var featureRoots = []string{"orcr/schedule", "orcr/accounts", "orcr/listen", "orcr/orchestrate", "orcr/orchestrate/run", "orcr/roles",
	"orcr/workflow/identity", "orcr/workflow/spawnpolicy", "orcr/web", "orcr/sandbox"}

func featureOf(pkg string) string {
	best := ""
	for _, r := range featureRoots {
		if (pkg == r || strings.HasPrefix(pkg, r+"/")) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

// A feature never imports another feature (DESIGN §5): where one needs another it
// asks through the kernel's registry (core.Lookup), typed by an interface of its own.
// Only a feature's api subpackage (wire types and method declarations) may be
// imported by another. Test files are not counted: a test may start another feature
// beside the one it tests.
func TestFeaturesImportNoOtherFeature(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]string{} // import path → directory
	for _, r := range featureRoots {
		dir := filepath.Join(root, strings.TrimPrefix(r, "orcr/"))
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(root, path)
			pkgs["orcr/"+filepath.ToSlash(rel)] = path
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		p, err := build.Default.ImportDir(pkgs[pkg], 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				continue
			}
			t.Fatalf("%s: %v", pkg, err)
		}
		checked++
		from := featureOf(pkg)
		for _, imp := range p.Imports {
			to := featureOf(imp)
			if to == "" || to == from || strings.HasSuffix(imp, "/api") || strings.Contains(imp, "/api/") {
				continue
			}
			t.Errorf("%s imports %s: feature %s must not import feature %s; provide what it needs through the kernel's registry (core.Kernel.Provide, core.Lookup)",
				pkg, imp, from, to)
		}
	}
	if checked < len(featureRoots) {
		t.Fatalf("checked %d packages of %d features: the walk found too few", checked, len(featureRoots))
	}
}

// sharedLibraries are the library packages features share: planning (the model catalog
// and the plan file format), used by plans and runs alike. A library imports no feature
// package at all, its api included, so that any feature may import it without reaching
// into another.
var sharedLibraries = []string{"orcr/planning"}

func TestSharedLibrariesImportNoFeature(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range sharedLibraries {
		p, err := build.Default.ImportDir(filepath.Join(root, strings.TrimPrefix(lib, "orcr/")), 0)
		if err != nil {
			t.Fatalf("%s: %v", lib, err)
		}
		if featureOf(lib) != "" {
			t.Errorf("%s lies inside feature %s: a shared library lives outside every feature", lib, featureOf(lib))
		}
		for _, imp := range p.Imports {
			if f := featureOf(imp); f != "" {
				t.Errorf("%s imports %s: a shared library must not import feature %s (move what it needs into the library)", lib, imp, f)
			}
		}
	}
}
