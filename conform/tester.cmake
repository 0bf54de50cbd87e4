# mroce-conform: the conformance tester (conform/tester: framework,
# conform/cases: the cases, one file per spec chapter or section).  It
# links only the wire codec, never the engine: it crafts and judges every
# packet itself (secure mode's with its own OpenSSL code, tester/secure.c).
file(GLOB MROCE_CONFORM_SRC CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/tester/*.c
     ${CMAKE_CURRENT_SOURCE_DIR}/cases/*.c)
add_executable(mroce-conform ${MROCE_CONFORM_SRC})
target_include_directories(mroce-conform PRIVATE
                           ${CMAKE_CURRENT_SOURCE_DIR}/tester)
target_link_libraries(mroce-conform mroce_wire OpenSSL::Crypto)

# Every requirement ID a case cites must exist in the spec's table.
add_test(NAME conform_ids
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tester/check_ids.sh
                 $<TARGET_FILE:mroce-conform>
                 ${CMAKE_SOURCE_DIR}/docs/spec/README.md)
set_tests_properties(conform_ids PROPERTIES LABELS "conform;lint")

# The whole suite against the reference agent, on free ports.
if(TARGET mroce-conform-agent)
  # Under ASan the agent runs 2-3x slower: the timing cases scale their
  # allowances (--slow), never their "too early" bounds.
  set(MROCE_CONFORM_SLOW)
  if(MROCE_SANITIZE)
    set(MROCE_CONFORM_SLOW --slow 3)
  endif()
  add_test(NAME conform_suite
           COMMAND mroce-conform --spawn $<TARGET_FILE:mroce-conform-agent>
                   ${MROCE_CONFORM_SLOW}
                   --junit ${CMAKE_CURRENT_BINARY_DIR}/conform_suite.xml)
  set_tests_properties(conform_suite PROPERTIES TIMEOUT 600 LABELS conform)
endif()
