// The option names fio knows (3.33's and 3.42's `fio --cmdhelp=all`, and `--enghelp=` of the
// engines iolab has), so an option iolab does not run is refused as a fio option iolab doesn't
// run, not as a typo.
export const FIO_OPTION_NAMES: ReadonlySet<string> = new Set(`
  allow_file_create allow_mounted_write allrandrepeat atomic ba block_error_percentiles bs
  bs_unaligned bsrange bssplit buffer_compress_chunk buffer_compress_percentage buffer_pattern
  buffered bwavgtime cgroup cgroup_nodelete cgroup_weight clat_percentiles clocksource cmd_type
  cmdprio cmdprio_bssplit cmdprio_class cmdprio_percentage continue_on_error cpumask cpus_allowed
  cpus_allowed_policy create_fsync create_on_open create_only create_serialize dedupe_global
  dedupe_mode dedupe_percentage dedupe_working_set_percentage description direct directory
  disable_bw_measurement disable_clat disable_lat disable_slat disk_util do_verify end_fsync
  error_dump exec_postrun exec_prerun exit_what exitall exitall_on_error experimental_verify
  fadvise_hint fallocate fdatasync file_append file_service_type filename filename_format filesize
  fill_device fixedbufs flow flow_id flow_sleep force_async fsync fsync_on_close gid
  group_reporting gtod_cpu gtod_reduce hipri ignore_error ignore_zone_limits invalidate io_size
  io_submit_mode iodepth iodepth_batch iodepth_batch_complete_max iodepth_batch_complete_min
  iodepth_low ioengine iopsavgtime ioscheduler job_max_open_zones kb_base lat_percentiles
  latency_percentile latency_run latency_target latency_window lockfile lockmem log_alternate_epoch
  log_alternate_epoch_clock_id log_avg_msec log_compression log_compression_cpus log_entries
  log_hist_coarseness log_hist_msec log_max_value log_offset log_prio log_store_compressed
  log_unix_epoch loops max_latency max_open_zones mem merge_blktrace_file merge_blktrace_iters
  merge_blktrace_scalars name new_group nice nonvectored norandommap nowait nrfiles numa_cpu_nodes
  numa_mem_policy number_ios numjobs offset offset_align offset_increment opendir openfiles
  overwrite per_job_logs percentage_random percentile_list pre_read prio prioclass profile
  ramp_time random_distribution random_generator randrepeat randseed rate rate_cycle
  rate_ignore_thinktime rate_iops rate_iops_min rate_min rate_process read_beyond_wp read_iolog
  read_iolog_chunked refill_buffers registerfiles replay_align replay_no_stall replay_redirect
  replay_scale replay_skip replay_time_scale runtime rw rw_sequencer rwmixread rwmixwrite
  scramble_buffers serialize_overlap significant_figures size slat_percentiles sqthread_poll
  sqthread_poll_cpu startdelay stats steadystate steadystate_duration steadystate_ramp_time
  stonewall sync sync_file_range thinktime thinktime_blocks thinktime_blocks_type thinktime_iotime
  thinktime_spin thp thread time_based trim_backlog trim_backlog_batch trim_percentage
  trim_verify_zero uid uncached unified_rw_reporting unique_filename unit_base unlink
  unlink_each_loop userspace_reap verify verify_async verify_backlog verify_backlog_batch
  verify_dump verify_fatal verify_interval verify_offset verify_only verify_pattern
  verify_state_load verify_state_save wait_for write_barrier write_bw_log write_hint write_hist_log
  write_iolog write_iops_log write_lat_log zero_buffers zone_reset_frequency zone_reset_threshold
  zonecapacity zonemode zonerange zonesize zoneskip
  apptag apptag_mask cmdprio_hint dataplacement deac dp_scheme end_syncfs fdp filetype hipri_percentage
  job_start_clock_id libaio_vectored log_issue_time log_window_value md_per_io_size num_range pi_act pi_chk
  plid_select plids priohint ramp_size readfua recover_zbd_write_error sprandom steadystate_check_interval
  thinkcycles verify_header_seed verify_mode verify_pattern_interval verify_write_sequence write_mode writefua
  write_zone_remainder
`.trim().split(/\s+/));

/** fio options iolab runs only at fio's default, where iolab does what fio's default does (it
 * verifies after writing, starts at once, lays a file out whole and synced, measures every
 * latency, stops at the first error...): each with the spellings of that default it accepts and
 * the default as fio's help gives it. Given so, the option is accepted and shown in the job's
 * options; any other value is refused, naming the default. */
export const FIO_DEFAULT_ONLY: Readonly<Record<string, { accepts: RegExp; shown: string }>> = (() => {
  const zero = { accepts: /^0$/, shown: '0' };
  const one = { accepts: /^1$/, shown: '1' };
  const noTime = { accepts: /^0+(\.0*)?(ns|us|ms|s|m|h)?$/i, shown: '0' };
  const none = (word: string) => ({ accepts: new RegExp(`^(${word}|0)$`), shown: word });
  return {
    do_verify: one, startdelay: noTime, create_fsync: one, create_serialize: one, create_on_open: zero, create_only: zero,
    allow_mounted_write: zero, file_append: zero, fill_device: zero, fsync_on_close: zero, write_barrier: zero, pre_read: zero,
    disable_bw_measurement: zero, disable_clat: zero, disable_lat: zero, disable_slat: zero, clat_percentiles: one,
    lat_percentiles: zero, slat_percentiles: zero, block_error_percentiles: zero, stats: one, disk_util: one,
    bwavgtime: { accepts: /^500(ms)?$/, shown: '500' }, iopsavgtime: { accepts: /^500(ms)?$/, shown: '500' },
    continue_on_error: none('none'), unified_rw_reporting: none('none'),
    rw_sequencer: { accepts: /^sequential$/, shown: 'sequential' }, lockfile: { accepts: /^none$/, shown: 'none' },
    zonecapacity: zero,
    max_open_zones: zero, job_max_open_zones: zero, ignore_zone_limits: zero, read_beyond_wp: zero,
    kb_base: { accepts: /^1024$/, shown: '1024' }, nrfiles: one, offset_align: zero, nice: zero,
    lockmem: zero, per_job_logs: one, log_unix_epoch: zero, log_hist_msec: zero, log_max_value: zero, serialize_overlap: zero,
    unlink_each_loop: zero, verify_async: zero, trim_percentage: zero, thinktime_spin: zero,
    thinktime_blocks: one, thinktime_iotime: zero, cgroup_nodelete: zero, unique_filename: one,
    percentile_list: { accepts: /^1:5:10:20:30:40:50:60:70:80:90:95:99:99\.5:99\.9:99\.95:99\.99$/, shown: 'fio\'s list' },
  };
})();
