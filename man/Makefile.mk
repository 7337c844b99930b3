# One man page per public function (man3).
dist_man3_MANS += man/man3/MPIX_Query_version.3 man/man3/MPIX_Get_library_version.3 \
	man/man3/MPIX_Comm_is_handled.3
dist_man3_MANS += man/man3/MPIX_Comm_dup_nowildcard.3 man/man3/MPIX_Unordered_region_open.3 \
	man/man3/MPIX_Unordered_region_close.3
dist_man3_MANS += man/man3/MPIX_Info_set_hex.3 man/man3/MPIX_Stream_create.3 man/man3/MPIX_Stream_free.3 \
	man/man3/MPIX_Stream_comm_create.3 man/man3/MPIX_Comm_get_stream.3 man/man3/MPIX_Send_enqueue.3 \
	man/man3/MPIX_Recv_enqueue.3 man/man3/MPIX_Isend_enqueue.3 man/man3/MPIX_Irecv_enqueue.3 \
	man/man3/MPIX_Wait_enqueue.3 man/man3/MPIX_Waitall_enqueue.3
dist_man3_MANS += man/man3/MPIX_Comm_device_handle.3 man/man3/MPIX_Isend.3 man/man3/MPIX_Irecv.3 \
	man/man3/MPIX_Test.3 man/man3/MPIX_Wait.3 man/man3/MPIX_Send.3 man/man3/MPIX_Recv.3 \
	man/man3/MPIX_Send_block.3 man/man3/MPIX_Recv_block.3
# Overview pages (man7).
dist_man7_MANS = man/man7/mpix_nowildcard.7 man/man7/mpix_streams.7
dist_man7_MANS += man/man7/mpix_device.7 man/man7/mpix_gpu.7
dist_man7_MANS += man/man7/mpix_transports.7 man/man7/mpix_errors.7 man/man7/mpix_mpit.7
