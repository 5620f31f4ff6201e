/* The JVM job's native library (System.loadLibrary("tb23")): it needs libtb23dep.so, found
   beside it through its RUNPATH ($ORIGIN), as a vendor's JNI library needs its own runtime. */
int tb23_dep_answer(void);
int tb23_answer(void) { return tb23_dep_answer(); }
