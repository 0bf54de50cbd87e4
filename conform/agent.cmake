# mroce-conform-agent: the conformance suite's test agent over libmroce
# (docs/spec/conformance-agent.md), its smoke test, and the seeded-fault
# build that shows the suite can fail (conform/README.md).  Included by
# conform/CMakeLists.txt; needs libmroce.
option(MROCE_SEEDED_FAULTS
       "Build mroce-conform-agent-faults: a second copy of the codec, engine and library with deliberate spec violations (normal libraries never contain them)"
       ON)

if(MROCE_HAVE_LIB)
  set(MROCE_AGENT_SRC
      ${CMAKE_CURRENT_SOURCE_DIR}/agent/agent_main.c
      ${CMAKE_CURRENT_SOURCE_DIR}/agent/agent_proto.c
      ${CMAKE_CURRENT_SOURCE_DIR}/agent/agent_cmds.c
      ${CMAKE_CURRENT_SOURCE_DIR}/agent/agent_qp.c)

  add_executable(mroce-conform-agent ${MROCE_AGENT_SRC})
  target_link_libraries(mroce-conform-agent mroce_static)

  # The agent's own test: a libmroce QP in the test process talks to an
  # agent QP driven over the control protocol, plus malformed commands.
  add_executable(test_conform_agent
                 ${CMAKE_CURRENT_SOURCE_DIR}/agent/test_agent_smoke.c)
  target_include_directories(test_conform_agent PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(test_conform_agent mroce_static)
  target_compile_definitions(test_conform_agent PRIVATE
    MROCE_AGENT_BIN="$<TARGET_FILE:mroce-conform-agent>")
  add_dependencies(test_conform_agent mroce-conform-agent)
  add_test(NAME conform_agent_smoke COMMAND test_conform_agent)
  set_tests_properties(conform_agent_smoke PROPERTIES TIMEOUT 120
                       LABELS conform)

  if(MROCE_SEEDED_FAULTS)
    # A second, separate copy of every layer compiled with the faults in;
    # linked only into mroce-conform-agent-faults.
    add_library(mroce_faults_objs OBJECT
                ${MROCE_WIRE_SRC} ${MROCE_ENGINE_SRC} ${MROCE_LIB_SRC}
                ${CMAKE_SOURCE_DIR}/src/dpdk/dpdk_stub.c)
    target_compile_definitions(mroce_faults_objs PRIVATE MROCE_SEEDED_FAULTS=1)
    target_include_directories(mroce_faults_objs PRIVATE
      ${CMAKE_SOURCE_DIR}/src/engine ${CMAKE_SOURCE_DIR}/src/udp
      ${CMAKE_SOURCE_DIR}/src/lib ${CMAKE_SOURCE_DIR}/src/dpdk)
    add_executable(mroce-conform-agent-faults ${MROCE_AGENT_SRC}
                   $<TARGET_OBJECTS:mroce_faults_objs>)
    target_compile_definitions(mroce-conform-agent-faults PRIVATE
                               MROCE_SEEDED_FAULTS=1)
    target_include_directories(mroce-conform-agent-faults PRIVATE
                               ${CMAKE_SOURCE_DIR}/src/wire)
    target_link_libraries(mroce-conform-agent-faults Threads::Threads
                          OpenSSL::Crypto)

    # The normal libraries must hold no fault code: no seeded-fault symbol
    # (mrw_seeded_fault_*, mre_seeded_dup) in libmroce (static and shared),
    # the engine or the codec.  Only symbol names are matched: the object
    # files themselves are called seeded_*.c.o.
    add_test(NAME conform_no_fault_symbols
             COMMAND sh -c "! nm -g \"$0\" \"$1\" \"$2\" \"$3\" 2>/dev/null | awk 'NF>=2{print $NF}' | grep seeded_"
                     $<TARGET_FILE:mroce_static> $<TARGET_FILE:mroce>
                     $<TARGET_FILE:mroce_engine> $<TARGET_FILE:mroce_wire>)
    set_tests_properties(conform_no_fault_symbols PROPERTIES
                         LABELS "conform;lint")

    # The fault list is long enough, unknown names are refused, and the
    # normal agent has no --fault at all.
    add_test(NAME conform_fault_cli
             COMMAND sh -c "n=$($0 --list-faults | wc -l) && [ $n -ge 12 ] && ! $0 --fault no_such --control 127.0.0.1:0 --udp 127.0.0.1:0 2>/dev/null && ! $1 --fault crc_skip --control 127.0.0.1:0 --udp 127.0.0.1:0 2>/dev/null"
                     $<TARGET_FILE:mroce-conform-agent-faults>
                     $<TARGET_FILE:mroce-conform-agent>)
    set_tests_properties(conform_fault_cli PROPERTIES LABELS conform)

    # run_faults.sh's own logic, against a stub tester that fails exactly
    # when the agent runs a fault (the real suite: conform_faults below).
    add_test(NAME conform_faults_script
             COMMAND env MROCE_CONFORM=${CMAKE_CURRENT_SOURCE_DIR}/agent/stub_tester.sh
                     sh ${CMAKE_CURRENT_SOURCE_DIR}/run_faults.sh
                     ${CMAKE_BINARY_DIR})
    set_tests_properties(conform_faults_script PROPERTIES TIMEOUT 300
                         LABELS conform)
  endif()
endif()

# conform_faults: the real suite must fail against every seeded fault.
# Needs the tester target, which tester.cmake (included after this file)
# defines: defer the check to the end of this directory.
# Not in sanitizer builds: the faults are the same code there, and 17 suite
# runs under ASan would take most of CI's time; the optimised build runs it.
function(mroce_conform_faults_test)
  if(TARGET mroce-conform AND TARGET mroce-conform-agent-faults AND
     NOT MROCE_SANITIZE)
    add_test(NAME conform_faults
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/run_faults.sh
                     ${CMAKE_BINARY_DIR})
    set_tests_properties(conform_faults PROPERTIES TIMEOUT 1800
                         LABELS conform)
  endif()
endfunction()
if(COMMAND cmake_language)
  cmake_language(DEFER CALL mroce_conform_faults_test)
endif()
