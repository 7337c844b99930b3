# One man page per public function (man3).
dist_man3_MANS += man/man3/MPIX_Query_version.3 man/man3/MPIX_Get_library_version.3 \
	man/man3/MPIX_Comm_is_handled.3
