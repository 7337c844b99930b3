# One man page per public function (man3).
dist_man3_MANS += man/man3/MPIX_Query_version.3 man/man3/MPIX_Get_library_version.3 \
	man/man3/MPIX_Comm_is_handled.3
dist_man3_MANS += man/man3/MPIX_Comm_dup_nowildcard.3 man/man3/MPIX_Unordered_region_open.3 \
	man/man3/MPIX_Unordered_region_close.3
# Overview pages (man7).
dist_man7_MANS = man/man7/mpix_nowildcard.7
