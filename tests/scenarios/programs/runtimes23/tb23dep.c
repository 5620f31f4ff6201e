/* The runtime libtb23.so depends on. */
int tb23_dep_answer(void) { return 42; }
