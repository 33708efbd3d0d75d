package wire

// Handler is one declared socket method together with what serves it. A feature's
// Methods returns its handlers; the server's dispatch, required-field check and the
// schema are built from them.
type Handler interface {
	// Spec is the method's declaration.
	Spec() MethodSpec
}
